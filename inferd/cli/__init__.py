"""The ``inferd`` command: `main` runs it; `inferd.cli.commands` registers every command.

``inferd serve`` runs in the process that then serves (a single worker serves in it), so its command
is built alone, from its own module: the other command modules, and typer's build of the forty-odd
other commands and groups (about 50 ms of every start, and the objects kept while serving), are
left out. Not even typer is loaded when serve's command line is one `inferd.cli.argv` reads (the
ones a server is started with): typer builds the command only for help and mistakes.
Every other command line goes through the whole app.
"""

from __future__ import annotations

import sys
from typing import Any


def main() -> None:
    if sys.argv[1:2] == ["serve"]:
        from inferd.engines import heap

        heap.pause()  # until the models load: see inferd.engines.heap
        from inferd.cli import argv

        values = argv.parse(sys.argv[2:])
        if values is not None:
            argv.run(values)
            return
        from inferd.cli.serve import command

        command().main(sys.argv[2:], prog_name="inferd serve")
    else:
        from inferd.cli.commands import app

        app()


def __getattr__(name: str) -> Any:
    """``inferd.cli.app``, the whole typer app (for typer's test runner), imported on first use."""
    if name != "app":
        raise AttributeError(f"module 'inferd.cli' has no attribute {name!r}")
    from inferd.cli.commands import app

    return app
