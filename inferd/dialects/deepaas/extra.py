"""What only the DEEPaaS dialect needs, behind ``inferd[deepaas]`` (issue 43 item 10): marshmallow and
webargs (the fields DEEPaaS models declare their arguments with), apispec (their Swagger document) and
swagger-ui-bundle (its page). Every other user of inferd no longer installs them, so nothing outside
this dialect may import them, and the dialect's entry point (`loader`) imports them only once a DEEPaaS
model is being served: auto-detection loads it for every target.

A model served without them ends ``inferd serve`` with `MissingExtra` (exit 2, the install line)."""

from __future__ import annotations

import importlib.util

from inferd.core.errors import MissingExtra

EXTRA = "deepaas"
#: Import names of the extra's libraries (swagger-ui-bundle imports as swagger_ui_bundle).
LIBRARIES = ("marshmallow", "webargs", "apispec", "swagger_ui_bundle")


def missing() -> list[str]:
    """The extra's libraries that cannot be imported here."""
    return [name for name in LIBRARIES if importlib.util.find_spec(name) is None]


def needed_by(error: ImportError) -> bool:
    """Whether ``error`` is the import of one of the extra's libraries failing (model code importing
    webargs, say)."""
    return (error.name or "").split(".")[0] in LIBRARIES


def require() -> None:
    """Raise `MissingExtra` naming ``inferd[deepaas]`` when any of its libraries is missing."""
    absent = missing()
    if absent:
        raise MissingExtra(
            f"DEEPaaS models need {', '.join(absent)}, which inferd installs with its deepaas extra: "
            f"{MissingExtra.install(EXTRA)}",
            EXTRA,
        )
