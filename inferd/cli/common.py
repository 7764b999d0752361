"""What every command shares: how errors are printed, how options become Settings, the option types
several commands take.

Nothing heavy is imported here (no server, engine, dialect or numpy): ``inferd --help`` loads only
typer and this package, and each command imports what it runs when it runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from inferd.core.settings import Settings
    from inferd.server.app import Runtime

errors = Console(stderr=True)
USAGE_ERROR = 2
ArgOption = Annotated[
    list[str] | None, typer.Option("--arg", "-a", help="DEEPaaS argument KEY=VALUE (repeatable).")
]
FileOption = Annotated[
    list[str] | None, typer.Option("--file", "-f", help="DEEPaaS file argument FIELD=PATH (repeatable).")
]
DIALECT_HELP = "Handler convention: auto, native, seldon, deepaas, cortex, abeja or graph."
ABEJA_STYLE_HELP = "ABEJA handler style: auto, 18.10 (generator) or 19.04 (request handler)."


def fail(message: str, code: int = USAGE_ERROR, instead: str | None = None) -> NoReturn:
    """Print ``message`` (and the command to type ``instead``, when there is one) and exit."""
    errors.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    if instead:
        errors.print(f"[bold]try:[/] {escape(instead)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def absolute(target: str) -> str:
    """A target naming a file or folder, made absolute: models may change the working directory on
    load (Cortex projects do), and worker processes resolve the target again."""
    from inferd.core.importer import split_target

    module, attr = split_target(target)
    if not Path(module).exists():
        return target
    return str(Path(module).resolve()) + (f":{attr}" if attr else "")


def settings_from(project: dict[str, Any] | None = None, **given: Any) -> Settings:
    """Settings from a project's ``inferd.yaml``, overridden by ``INFERD_*`` variables, overridden by the
    options given on the command line."""
    from pydantic import ValidationError

    from inferd.core.settings import Settings

    from_project = {
        key: value for key, value in (project or {}).items() if f"INFERD_{key.upper()}" not in os.environ
    }
    given = {**from_project, **{key: value for key, value in given.items() if value is not None}}
    if given.get("target"):
        given["target"] = absolute(given["target"])
    try:
        return Settings(**given)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}" for e in exc.errors()
        )
        fail(f"invalid option: {problems}")


def runtime_or_exit(settings: Settings, instead: str | None = None) -> Runtime:
    """The runtime serving ``settings``; a target that cannot be served ends the command with code 2
    (suggesting what to type ``instead``), a model that fails to load with code 1."""
    from inferd.core.errors import ModelLoadError, TargetError
    from inferd.server.app import build_runtime

    try:
        return build_runtime(settings)
    except TargetError as exc:
        fail(exc.message, instead=instead)
    except ModelLoadError as exc:
        fail(exc.message, code=1)


def pair(text: str, option: str, form: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        fail(f"{option} takes {form}, not {text!r}")
    return key, value


def read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        fail(f"cannot read input {path}: {exc.strerror}")
