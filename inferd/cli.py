"""The ``inferd`` command: argv → Settings → engine. No serving logic lives here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console

from inferd import __version__
from inferd.core.errors import InferdError, ListenError, ModelLoadError, TargetError
from inferd.core.importer import split_target
from inferd.core.settings import Settings
from inferd.engines import local
from inferd.engines.supervisor import Supervisor
from inferd.protocols.status import error_message
from inferd.protocols.v2.http_codec import decode_request, encode_response
from inferd.server.app import Runtime, build_runtime
from inferd.server.logging import configure_logging

app = typer.Typer(
    name="inferd",
    help="Serve Seldon, DEEPaaS, Cortex, ABEJA and native model code over their own protocols and V2.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
errors = Console(stderr=True)

USAGE_ERROR = 2
DIALECT_HELP = "Handler convention: auto, native, seldon, deepaas, cortex or abeja."


def _fail(message: str, code: int = USAGE_ERROR) -> NoReturn:
    errors.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _absolute(target: str) -> str:
    """A target naming a file or folder, made absolute: models may change the working directory on
    load (Cortex projects do), and worker processes resolve the target again."""
    module, attr = split_target(target)
    if not Path(module).exists():
        return target
    return str(Path(module).resolve()) + (f":{attr}" if attr else "")


def _settings(**given: Any) -> Settings:
    """Settings from ``INFERD_*`` variables, overridden by the options given on the command line."""
    if given.get("target"):
        given["target"] = _absolute(given["target"])
    try:
        return Settings(**{key: value for key, value in given.items() if value is not None})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        _fail(f"invalid option: {problems}")


def _version(value: bool) -> None:
    if value:
        print(f"inferd {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """inferd: one model server for many model conventions."""


@app.command()
def serve(
    target: Annotated[
        str, typer.Argument(help="path/model.py:Class, module:Class, a directory or config file.")
    ],
    dialect: Annotated[str | None, typer.Option(help=DIALECT_HELP)] = None,
    name: Annotated[str | None, typer.Option(help="Serve the model under this name.")] = None,
    host: Annotated[str | None, typer.Option(help="Interface to bind [default: 127.0.0.1].")] = None,
    port: Annotated[int | None, typer.Option(help="HTTP port, 0 for a free one [default: 8080].")] = None,
    grpc_port: Annotated[
        int | None, typer.Option(help="gRPC port, 0 for a free one [default: 8081].")
    ] = None,
    no_grpc: Annotated[bool, typer.Option("--no-grpc", help="Serve HTTP only.")] = False,
    workers: Annotated[
        int | None, typer.Option(help="Server processes sharing the ports [default: 1].")
    ] = None,
    access_log: Annotated[
        bool | None, typer.Option("--access-log/--no-access-log", help="Log every request.")
    ] = None,
    log_level: Annotated[str | None, typer.Option(help="debug, info, warning or error.")] = None,
    install_requirements: Annotated[
        bool | None,
        typer.Option("--install-requirements", help="pip-install the project's requirements.txt first."),
    ] = None,
) -> None:
    """Serve TARGET over HTTP and gRPC until SIGTERM or Ctrl+C."""
    settings = _settings(
        target=target,
        dialect=dialect,
        name=name,
        host=host,
        port=port,
        grpc_port=grpc_port,
        grpc_enabled=False if no_grpc else None,
        workers=workers,
        access_log=access_log,
        log_level=log_level,
        install_requirements=install_requirements,
    )
    configure_logging(settings.log_level)
    runtime = _runtime_or_exit(settings)
    try:
        if settings.workers > 1:
            code = Supervisor(settings, local.print_ready).run()
        else:
            local.run(local.serve(settings, local.print_ready, runtime=runtime))
            code = 0
    except (ModelLoadError, ListenError) as exc:
        _fail(exc.message, code=1)
    raise typer.Exit(code)


def _runtime_or_exit(settings: Settings) -> Runtime:
    try:
        return build_runtime(settings)
    except TargetError as exc:
        _fail(exc.message)


@app.command()
def predict(
    target: Annotated[str, typer.Argument(help="What to load, as for `inferd serve`.")],
    input: Annotated[
        str, typer.Option("--input", "-i", help="A V2 inference request JSON file, or - for stdin.")
    ],
    dialect: Annotated[str | None, typer.Option(help=DIALECT_HELP)] = None,
    model: Annotated[str | None, typer.Option(help="Model to call when the target serves several.")] = None,
) -> None:
    """Run one prediction in this process and print the V2 JSON response."""
    settings = _settings(target=target, dialect=dialect, log_level="warning")
    configure_logging(settings.log_level)
    runtime = _runtime_or_exit(settings)
    body = sys.stdin.buffer.read() if input == "-" else _read(Path(input))

    async def once() -> bytes:
        await runtime.registry.load_all()
        try:
            request = decode_request(body, None)
            name = model or runtime.registry.names()[0]
            response = await runtime.dataplane.infer(name, None, request, "cli")
            content, _ = encode_response(response, request)
            return content
        finally:
            await runtime.registry.unload_all()

    try:
        content = local.run(once())
    except InferdError as exc:
        _fail(error_message(exc), code=1)
    sys.stdout.write(content.decode() + "\n")


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        _fail(f"cannot read input {path}: {exc.strerror}")


def main() -> None:
    app()
