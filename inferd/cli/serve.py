"""``inferd serve``: argv → Settings → engine. No serving logic lives here: the engines serve, this
module only turns options, a project's ``inferd.yaml`` and a platform's environment into one Settings
object.

It imports no typer: a serving process whose command line `inferd.cli.argv` reads calls `serve`
without it (typer and the command it builds are about 2 MiB of every server, issue 26); `command`
builds the typer command for every other command line (help, errors)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from inferd.cli import hints
from inferd.cli.common import fail, load_project, runtime_or_exit, settings_from

if TYPE_CHECKING:
    from typer.core import TyperCommand

    from inferd.config.project import Project
    from inferd.config.settings import Settings


def command() -> TyperCommand:
    """``inferd serve``: its options generated from the settings (imported here, not for ``inferd
    --help``)."""
    from inferd.cli import options
    from inferd.cli.help import Command

    return options.command(serve, Command)


def serve(target: str | None, **values: Any) -> None:
    """Serve TARGET over HTTP and gRPC until SIGTERM or Ctrl+C (over HTTP only on Ray Serve)."""
    from inferd.cli import options
    from inferd.cli.user_errors import user_code_errors
    from inferd.core.errors import EngineError, ListenError, MissingExtra, ModelLoadError
    from inferd.dialects import resolve_dialect
    from inferd.engines import heap, local
    from inferd.server.logging import configure_logging, log_format

    dialect = values.pop("dialect")
    if target and values.get("repository"):
        fail("--repository names what is served: give it without a TARGET")
    if not target and (values.get("repository") or os.environ.get("INFERD_REPOSITORY")):
        dialect = dialect or "repository"  # the repository is what is served: no TARGET
    elif not target and os.environ.get("HANDLER"):
        target, dialect = os.environ["HANDLER"], dialect or "abeja"
    if not target and os.environ.get("MODEL_NAME"):  # a Seldon s2i image
        target, dialect = os.environ["MODEL_NAME"], dialect or "seldon"
    if not target and os.environ.get("DEEPAAS_V2_MODEL"):
        dialect = dialect or "deepaas"
    if not target and not os.environ.get("INFERD_TARGET") and dialect not in ("deepaas", "repository"):
        fail(
            "missing TARGET: name what to serve (or set HANDLER=module:function for an ABEJA handler, "
            "MODEL_NAME=Class for a Seldon component, --repository DIR_OR_URI for a model repository, or "
            "pass --dialect deepaas for DEEPaaS entry points)"
        )
    given = options.given({**values, "dialect": dialect})
    if given.get("model_settings") is not None:  # read after the chdir to the project below
        given["model_settings"] = given["model_settings"].resolve()
    instead = hints.instead(target, dialect)
    with user_code_errors():
        project = load_project(
            target, lambda name, target: resolve_dialect(name, target).name, instead, **given
        )
        if project.file is not None:  # each platform ran its code from the project's root
            os.chdir(project.folder)
        configure_logging(project.settings.log_level)
        settings = with_platform_environment(project, instead)
        runtime = runtime_or_exit(settings, instead)
    configure_logging(settings.log_level, log_format(settings))  # the format may depend on the dialect
    if settings.engine == "ray" or settings.workers > 1 or settings.isolate:
        heap.resume_frozen()  # this process loads no model: `local.serve` would resume it then
    try:
        # Imported when used: a single process serving a model keeps neither in memory.
        if settings.engine == "ray":
            from inferd.engines import ray as ray_engine

            code = ray_engine.run(settings, local.print_ready, tuple(runtime.registry.names()))
        elif settings.workers > 1 or settings.isolate:
            from inferd.engines.supervisor import Supervisor

            code = Supervisor(settings, local.print_ready).run()
        else:
            local.run(local.serve(settings, local.print_ready, runtime=runtime))
            code = 0
    except MissingExtra as exc:  # the ray engine's: code 2, as every extra not installed
        fail(exc.message)
    except (ModelLoadError, ListenError, EngineError) as exc:
        fail(exc.message, code=1)
    raise SystemExit(code)  # as typer.Exit(code) would end the command, without importing typer


def stand_in() -> None:
    """What ``inferd --help`` lists for ``serve`` (see ``help.Lazy``)."""


stand_in.__doc__ = serve.__doc__


def with_platform_environment(project: Project, instead: str | None = None) -> Settings:
    """The project's settings with its dialect told once (the runtime and the workers need not detect
    it again), completed by the dialect's platform variables where nothing else set a field."""
    from inferd.core.errors import TargetError
    from inferd.dialects import resolve_dialect

    settings = project.settings
    try:
        dialect = resolve_dialect(project.dialect, settings.target)
        found = dialect.settings_from_environment()
    except TargetError as exc:
        fail(exc.message, instead=instead)
    except ValueError as exc:
        fail(f"invalid platform environment variable: {exc}")
    fresh = {key: value for key, value in found.items() if key not in settings.model_fields_set}
    return settings_from(**{**settings.model_dump(exclude_unset=True), **fresh, "dialect": dialect.name})
