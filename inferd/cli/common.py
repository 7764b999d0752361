"""What every command shares: how errors are printed, how options become Settings, the option types
several commands take.

Nothing heavy is imported here (no server, engine, dialect or numpy, not even typer, which a serving
process does without: see `inferd.cli.argv`): ``inferd --help`` loads only typer and this package,
and each command imports what it runs when it runs. rich too is imported
when something is printed with it (`errors`, `escape`): ``inferd serve`` is the serving process,
which prints only its ready line and JSON logs and so never loads it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from rich.console import Console

    from inferd.config.project import Project, Resolver
    from inferd.config.settings import Settings
    from inferd.server.app import Runtime

USAGE_ERROR = 2
DIALECT_HELP = "Handler convention: auto, native, seldon, deepaas, cortex, abeja, graph or repository."
ABEJA_STYLE_HELP = "ABEJA handler style: auto, 18.10 (generator) or 19.04 (request handler)."


@functools.cache
def errors() -> Console:
    """The console of the commands' messages, on stderr; made on first use."""
    from rich.console import Console

    return Console(stderr=True)


def escape(text: str) -> str:
    """``text`` with rich's markup escaped, to print it as it is."""
    from rich.markup import escape

    return escape(text)


def fail(message: str, code: int = USAGE_ERROR, instead: str | None = None) -> NoReturn:
    """Print ``message`` (and the command to type ``instead``, when there is one) and exit."""
    import typer

    errors().print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    if instead:
        errors().print(f"[bold]try:[/] {escape(instead)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def settings_from(**given: Any) -> Settings:
    """Settings from ``INFERD_*`` variables, overridden by the options given on the command line (None
    is not given); invalid ones end the command with code 2."""
    from inferd.config.project import InvalidSettings, absolute
    from inferd.config.project import settings_from as validated

    given = {key: value for key, value in given.items() if value is not None}
    if given.get("target"):
        given["target"] = absolute(given["target"], Path.cwd())
    try:
        return validated(given)
    except InvalidSettings as exc:
        fail(exc.message)


def load_project(
    target: str | None, resolve: Resolver | None = None, instead: str | None = None, **given: Any
) -> Project:
    """``target``'s project (its ``inferd.yaml`` read) with the options given on the command line; one
    that cannot be read ends the command with code 2, suggesting what to type ``instead`` (so does
    a storage scheme whose extra is not installed: a `MissingExtra` is a TargetError), one in object
    storage that cannot be fetched with code 1."""
    from inferd.config.project import Project
    from inferd.core.errors import ModelLoadError, TargetError

    try:
        return Project.load(target, given, resolve)
    except TargetError as exc:
        fail(exc.message, instead=instead)
    except ModelLoadError as exc:
        fail(exc.message, code=1)


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
