"""Options several commands take, as typer declares them (``--arg`` and ``--file``, DEEPaaS's)."""

from __future__ import annotations

from typing import Annotated

import typer

ArgOption = Annotated[
    list[str] | None, typer.Option("--arg", "-a", help="DEEPaaS argument KEY=VALUE (repeatable).")
]
FileOption = Annotated[
    list[str] | None, typer.Option("--file", "-f", help="DEEPaaS file argument FIELD=PATH (repeatable).")
]
