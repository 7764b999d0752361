"""HTTP's conditional requests on an endpoint: of two roll-outs switching one endpoint at once, the
second to switch fails (412) instead of silently undoing the first."""

from __future__ import annotations

from inferd.core.errors import PreconditionFailed
from inferd.platform.records import Endpoint


def check_condition(
    deployment: str, name: str, endpoint: Endpoint | None, if_match: str | None, if_none_match: str | None
) -> None:
    """HTTP's ``If-Match`` (entity tags, or ``*``: it exists) and ``If-None-Match: *`` (it does not
    exist yet) on an endpoint; PreconditionFailed (412) naming what changed when one does not hold."""
    called = f"endpoint {name!r} of deployment {deployment!r}"
    if if_none_match is not None and if_none_match.strip() == "*" and endpoint is not None:
        raise PreconditionFailed(f"{called} exists already (If-None-Match: *): someone created it since")
    if if_match is None:
        return
    if endpoint is None:
        raise PreconditionFailed(f"{called} does not exist (If-Match: {if_match}): someone deleted it since")
    tags = {tag.strip() for tag in if_match.split(",")}
    if "*" not in tags and endpoint.etag not in tags:
        raise PreconditionFailed(
            f"{called} has changed since it was read (If-Match: {if_match}, it is now {endpoint.etag}): "
            "read it again before switching it"
        )
