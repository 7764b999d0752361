"""The ``inferd`` command: argv → Settings → engine. No serving logic lives here."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from inferd import __version__
from inferd.core.errors import EngineError, InferdError, ListenError, ModelLoadError, TargetError
from inferd.core.project import InvalidSettings, Project, Resolver, absolute, settings_from
from inferd.core.settings import Settings
from inferd.dialects import resolve_dialect
from inferd.engines import local
from inferd.protocols.status import error_message
from inferd.protocols.v2.http_codec import decode_request, encode_response
from inferd.server.app import Runtime, build_runtime
from inferd.server.logging import configure_logging, log_format

if TYPE_CHECKING:  # the dialects' command-line helpers load only for their commands: serving stays lean
    from inferd.dialects.abeja import local as abeja
    from inferd.dialects.abeja.service import AbejaModel, Call

app = typer.Typer(
    name="inferd",
    help="Serve Seldon, DEEPaaS, Cortex, ABEJA and native model code over their own protocols and V2.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
errors = Console(stderr=True)
export_app = typer.Typer(help="Write deployment files for a model project.", no_args_is_help=True)
app.add_typer(export_app, name="export")

USAGE_ERROR = 2
ArgOption = Annotated[
    list[str] | None, typer.Option("--arg", "-a", help="DEEPaaS argument KEY=VALUE (repeatable).")
]
FileOption = Annotated[
    list[str] | None, typer.Option("--file", "-f", help="DEEPaaS file argument FIELD=PATH (repeatable).")
]
DIALECT_HELP = "Handler convention: auto, native, seldon, deepaas, cortex, abeja or graph."
ABEJA_STYLE_HELP = "ABEJA handler style: auto, 18.10 (generator) or 19.04 (request handler)."


def _fail(message: str, code: int = USAGE_ERROR) -> NoReturn:
    errors.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _settings(**given: Any) -> Settings:
    """Settings from ``INFERD_*`` variables, overridden by the options given on the command line."""
    given = {key: value for key, value in given.items() if value is not None}
    if given.get("target"):
        given["target"] = absolute(given["target"], Path.cwd())
    try:
        return settings_from(given)
    except InvalidSettings as exc:
        _fail(exc.message)


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
        str | None,
        typer.Argument(
            help="path/model.py:Class, module:Class, a directory or config file; "
            "without it, the ABEJA handler named by HANDLER."
        ),
    ] = None,
    dialect: Annotated[str | None, typer.Option(help=DIALECT_HELP)] = None,
    name: Annotated[str | None, typer.Option(help="Serve the model under this name.")] = None,
    host: Annotated[
        str | None, typer.Option("--host", "--listen-ip", help="Interface to bind [default: 127.0.0.1].")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port", "--http-port", "--listen-port", help="HTTP port, 0 for a free one [default: 8080]."
        ),
    ] = None,
    grpc_port: Annotated[
        int | None, typer.Option(help="gRPC port, 0 for a free one [default: 8081].")
    ] = None,
    no_grpc: Annotated[bool, typer.Option("--no-grpc", help="Serve HTTP only.")] = False,
    workers: Annotated[
        int | None, typer.Option(help="Server processes sharing the ports [default: 1].")
    ] = None,
    isolate: Annotated[
        bool | None,
        typer.Option(
            "--isolate/--no-isolate",
            help="Run user code in a model process per worker: a crash, hang or memory overrun "
            "answers 503 and the process is replaced.",
        ),
    ] = None,
    access_log: Annotated[
        bool | None, typer.Option("--access-log/--no-access-log", help="Log every request.")
    ] = None,
    log_level: Annotated[str | None, typer.Option(help="debug, info, warning or error.")] = None,
    install_requirements: Annotated[
        bool | None,
        typer.Option("--install-requirements", help="pip-install the project's requirements.txt first."),
    ] = None,
    abeja_style: Annotated[str | None, typer.Option(help=ABEJA_STYLE_HELP)] = None,
    metrics_port: Annotated[
        int | None, typer.Option(help="Also serve the Prometheus endpoint on this port.")
    ] = None,
    service_type: Annotated[
        str | None,
        typer.Option(help="Seldon component type: MODEL, ROUTER, TRANSFORMER, OUTPUT_TRANSFORMER, COMBINER."),
    ] = None,
    parameters: Annotated[
        str | None, typer.Option(help='Seldon parameters: [{"name": ..., "value": ..., "type": "INT"}].')
    ] = None,
    model_name: Annotated[
        str | None, typer.Option(help="DEEPaaS: the deepaas.v2.model entry point to serve [default: all].")
    ] = None,
    base_path: Annotated[str | None, typer.Option(help="DEEPaaS: a prefix for its routes.")] = None,
    predict_endpoint: Annotated[
        bool | None, typer.Option("--predict-endpoint/--nopredict-endpoint", help="DEEPaaS predict routes.")
    ] = None,
    train_endpoint: Annotated[
        bool | None, typer.Option("--train-endpoint/--notrain-endpoint", help="DEEPaaS training routes.")
    ] = None,
    doc_endpoint: Annotated[
        bool | None, typer.Option("--doc-endpoint/--nodoc-endpoint", help="DEEPaaS Swagger UI at /api.")
    ] = None,
    warm: Annotated[bool | None, typer.Option("--warm/--nowarm", help="DEEPaaS: call warm() first.")] = None,
    data_dir: Annotated[
        Path | None, typer.Option(help="Where state (training jobs) is kept [default: ./.inferd].")
    ] = None,
    max_batch_size: Annotated[
        int | None, typer.Option(help="Batch up to this many rows per model call [default: 1, off].")
    ] = None,
    max_batch_time_ms: Annotated[
        float | None, typer.Option(help="How long a batch waits for more requests [default: 1].")
    ] = None,
    model_settings: Annotated[
        Path | None, typer.Option(help="YAML/JSON file of per-model settings (batching).")
    ] = None,
    auth_token: Annotated[
        list[str] | None,
        typer.Option(
            help="Require 'Authorization: Bearer TOKEN' (repeatable); INFERD_AUTH_TOKENS keeps it out of ps."
        ),
    ] = None,
    allowed_origin: Annotated[
        list[str] | None,
        typer.Option(
            help="Another site (scheme://host[:port]) whose pages may call control routes (repeatable)."
        ),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(help="A Host name answered besides loopback ones (repeatable; .example.com, *)."),
    ] = None,
    engine: Annotated[
        str | None, typer.Option(help="local (this machine) or ray (Ray Serve replicas) [default: local].")
    ] = None,
    replicas: Annotated[int | None, typer.Option(help="Ray Serve replicas [default: 1].")] = None,
    autoscale: Annotated[
        str | None, typer.Option(help="MIN:MAX Ray Serve replicas, scaled by load (replaces --replicas).")
    ] = None,
    ray_address: Annotated[
        str | None, typer.Option(help="A Ray cluster to deploy to [default: a local Ray of its own].")
    ] = None,
    ray_haproxy: Annotated[
        bool | None, typer.Option("--ray-haproxy", help="Ray Serve's HAProxy ingress (Ray 2.55+).")
    ] = None,
    ray_num_cpus: Annotated[
        float | None, typer.Option(help="CPUs each Ray replica reserves, fractions allowed [default: 1].")
    ] = None,
) -> None:
    """Serve TARGET over HTTP and gRPC until SIGTERM or Ctrl+C (over HTTP only on Ray Serve)."""
    if not target and os.environ.get("HANDLER"):
        target, dialect = os.environ["HANDLER"], dialect or "abeja"
    if not target and os.environ.get("MODEL_NAME"):  # a Seldon s2i image
        target, dialect = os.environ["MODEL_NAME"], dialect or "seldon"
    if not target and os.environ.get("DEEPAAS_V2_MODEL"):
        dialect = dialect or "deepaas"
    if not target and not os.environ.get("INFERD_TARGET") and dialect != "deepaas":
        _fail(
            "missing TARGET: name what to serve (or set HANDLER=module:function for an ABEJA handler, "
            "MODEL_NAME=Class for a Seldon component, or pass --dialect deepaas for DEEPaaS entry points)"
        )
    project = _project(
        target,
        lambda name, target: resolve_dialect(name, target).name,
        dialect=dialect,
        name=name,
        host=host,
        port=port,
        grpc_port=grpc_port,
        grpc_enabled=False if no_grpc else None,
        workers=workers,
        isolate=isolate,
        access_log=access_log,
        log_level=log_level,
        install_requirements=install_requirements,
        abeja_style=abeja_style,
        metrics_port=metrics_port,
        service_type=service_type,
        parameters=parameters,
        model_name=model_name,
        base_path=base_path,
        predict_endpoint=predict_endpoint,
        train_endpoint=train_endpoint,
        doc_endpoint=doc_endpoint,
        warm=warm,
        data_dir=data_dir,
        max_batch_size=max_batch_size,
        max_batch_time_ms=max_batch_time_ms,
        model_settings=model_settings.resolve() if model_settings else None,
        auth_tokens=auth_token or None,
        allowed_origins=allowed_origin or None,
        allowed_hosts=allowed_host or None,
        engine=engine,
        replicas=replicas,
        autoscale=autoscale,
        ray_address=ray_address,
        ray_haproxy=ray_haproxy,
        ray_num_cpus=ray_num_cpus,
    )
    if project.file is not None:  # each platform ran its code from the project's root
        os.chdir(project.folder)
    configure_logging(project.settings.log_level)
    settings = _with_platform_environment(project)
    runtime = _runtime_or_exit(settings)
    configure_logging(settings.log_level, log_format(settings))  # the format may depend on the dialect
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
    except (ModelLoadError, ListenError, EngineError) as exc:
        _fail(exc.message, code=1)
    raise typer.Exit(code)


def _project(target: str | None, resolve: Resolver | None = None, **given: Any) -> Project:
    """``target``'s project (its ``inferd.yaml`` read), with the options given on the command line."""
    try:
        return Project.load(target, given, resolve)
    except TargetError as exc:
        _fail(exc.message)


@app.command()
def init(
    folder: Annotated[Path, typer.Argument(help="The project folder to create (new or empty).")],
    dialect: Annotated[
        str, typer.Option(help="The convention: native, seldon, deepaas, cortex or abeja.")
    ] = "native",
) -> None:
    """Create a project that `inferd serve FOLDER` serves at once: model code, inferd.yaml, requirements,
    a test, a README and a sample request for `inferd call`."""
    from inferd import scaffold

    try:
        written = scaffold.create(folder, dialect)
    except scaffold.ScaffoldError as exc:
        _fail(str(exc))
    name = _project(str(folder)).name
    for path in written:
        errors.print(f"  [green]created[/] {escape(str(path))}", highlight=False)
    errors.print(
        f"Next: [bold]inferd serve {escape(str(folder))}[/], then "
        f"[bold]inferd call {name} --input {escape(str(folder / 'sample.json'))}[/] (see the README).",
        highlight=False,
    )


def _with_platform_environment(project: Project) -> Settings:
    """The project's settings with its dialect told once (the runtime and the workers need not detect
    it again), completed by the dialect's platform variables where nothing else set a field."""
    settings = project.settings
    try:
        dialect = resolve_dialect(project.dialect, settings.target)
        found = dialect.settings_from_environment()
    except TargetError as exc:
        _fail(exc.message)
    except ValueError as exc:
        _fail(f"invalid platform environment variable: {exc}")
    fresh = {key: value for key, value in found.items() if key not in settings.model_fields_set}
    return _settings(**{**settings.model_dump(exclude_unset=True), **fresh, "dialect": dialect.name})


def _runtime_or_exit(settings: Settings) -> Runtime:
    try:
        return build_runtime(settings)
    except TargetError as exc:
        _fail(exc.message)
    except ModelLoadError as exc:
        _fail(exc.message, code=1)


@app.command()
def predict(
    target: Annotated[
        str, typer.Argument(help="What to load, as for `inferd serve` (a DEEPaaS model name).")
    ],
    input: Annotated[
        str | None, typer.Option("--input", "-i", help="A V2 inference request JSON file, or - for stdin.")
    ] = None,
    dialect: Annotated[str | None, typer.Option(help=DIALECT_HELP)] = None,
    model: Annotated[str | None, typer.Option(help="Model to call when the target serves several.")] = None,
    arg: ArgOption = None,
    file: FileOption = None,
) -> None:
    """Run one prediction in this process: V2 JSON in and out, or DEEPaaS --arg/--file arguments."""
    if dialect == "deepaas":
        _deepaas_call("predict", target, arg or [], file or [])
        return
    if input is None:
        _fail("missing --input: a V2 inference request JSON file, or - for stdin")
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


@app.command()
def train(
    target: Annotated[str, typer.Argument(help="The DEEPaaS model: an entry-point name or module:attr.")],
    dialect: Annotated[str, typer.Option(help="Only deepaas trains.")] = "deepaas",
    arg: ArgOption = None,
    file: FileOption = None,
    url: Annotated[
        str | None, typer.Option("--url", help="Start the training on this running server instead.")
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow", help="With --url: show the job until it ends; exit 1 unless done.")
    ] = False,
) -> None:
    """Train a DEEPaaS model once in this process, like `deepaas-cli train`, and print the record; or,
    with --url, start a training job on a running server and print (or --follow) its record."""
    if dialect != "deepaas":
        _fail("only DEEPaaS models train: pass --dialect deepaas")
    if url is None:
        if follow:
            _fail("--follow needs --url: a training in this process is always followed to its end")
        _deepaas_call("train", target, arg or [], file or [])
        return
    if file:
        _fail("--file is for trainings in this process; a server's train route takes arguments only")
    _remote_training(url, target, arg or [], follow)


def _remote_training(url: str, name: str, args: list[str], follow: bool) -> None:
    from inferd import client

    arguments: dict[str, list[str]] = {}
    for item in args:
        key, value = _pair(item, "--arg", "KEY=VALUE")
        arguments.setdefault(key, []).append(value)
    try:
        path, record = client.start_training(url, name, arguments)
        if follow:
            job = record["uuid"]
            columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
            with Progress(*columns, console=errors, transient=True) as progress:
                task = progress.add_task(f"training {name} ({job})", total=None)
                for record in client.follow_training(url, path, job):
                    progress.update(task, description=f"training {name} ({job}): {record['status']}")
    except client.ClientError as exc:
        _fail(str(exc), code=1)
    sys.stdout.write(json.dumps(record, indent=2) + "\n")
    raise typer.Exit(1 if follow and record.get("status") != "done" else 0)


def _deepaas_call(method: str, target: str, args: list[str], files: list[str]) -> None:
    from inferd.dialects.deepaas import local as deepaas

    settings = _settings(dialect="deepaas", log_level="warning")
    configure_logging(settings.log_level)
    try:
        model = deepaas.load(target, settings)
        # a training may take long: a spinner while it runs (on a terminal only, on stderr)
        with errors.status(f"{method} {target}…") if method == "train" else contextlib.nullcontext():
            result = deepaas.call(model, method, args, files)
    except deepaas.LocalCallError as exc:
        _fail(str(exc))
    except (TargetError, ModelLoadError) as exc:
        _fail(exc.message, code=1)
    if isinstance(result, (bytes, bytearray)):
        sys.stdout.buffer.write(result)
        sys.stdout.flush()
        return
    sys.stdout.write(json.dumps(result, indent=2, default=str) + "\n")


# --- ABEJA's local commands -----------------------------------------------------------------------

HandlerOption = Annotated[str, typer.Option("--handler", "-h", help="The handler, module:function.")]
EnvironmentOption = Annotated[
    list[str] | None, typer.Option("--environment", "-e", help="User variable KEY:VALUE (repeatable).")
]
OrganizationOption = Annotated[
    str | None, typer.Option("--organization", "-o", help="ABEJA_ORGANIZATION_ID for the handler.")
]
StyleOption = Annotated[str, typer.Option(help=ABEJA_STYLE_HELP)]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="Do not show the handler's log.")]


def _abeja_environment(handler: str, environment: list[str] | None, organization: str | None) -> None:
    from inferd.dialects.abeja import local as abeja

    try:
        abeja.apply_environment(handler, abeja.user_variables(environment or []), organization)
    except abeja.LocalRunError as exc:
        _fail(str(exc))


def _abeja_in_process(
    handler: str, environment: list[str] | None, organization: str | None, quiet: bool
) -> abeja.CapturedLogs:
    """The environment and log capture of a command that runs the handler in this process."""
    from inferd.dialects.abeja import local as abeja

    _abeja_environment(handler, environment, organization)
    return abeja.CapturedLogs(echo=not quiet).install()


def _load_handler(handler: str, style: str, logs: abeja.CapturedLogs) -> AbejaModel:
    from inferd.dialects.abeja import local as abeja

    try:
        return abeja.load(handler, style)
    except Exception as exc:
        logging.getLogger("inferd.abeja").exception("cannot load handler %s", handler)
        _abeja_error(f"cannot load handler {handler}: {exc}", logs)


def _abeja_error(message: str, logs: abeja.CapturedLogs) -> NoReturn:
    print(f"[error] {message}", file=sys.stderr)
    if not logs.echo:
        print(logs.text(), file=sys.stderr)
    raise typer.Exit(1)


@app.command("run-local")
def run_local(
    handler: HandlerOption,
    input: Annotated[
        Path, typer.Option("--input", "-i", help="The request body: .json, an image or a video.")
    ],
    environment: EnvironmentOption = None,
    organization: OrganizationOption = None,
    quiet: QuietOption = False,
    abeja_style: StyleOption = "auto",
) -> None:
    """Call an ABEJA handler once with FILE, like `abeja model run-local` without Docker."""
    from inferd.dialects.abeja import local as abeja

    logs = _abeja_in_process(handler, environment, organization, quiet)
    try:
        call = abeja.run_local_call(input)
    except abeja.LocalRunError as exc:
        _abeja_error(str(exc), logs)
    # The handler's prints belong to its log, not to the output (`> out.jpg` must stay an image).
    with contextlib.redirect_stdout(logs.output()):
        answer = _load_handler(handler, abeja_style, logs).answer(call)
    problem = abeja.failure(answer)
    if problem:
        _abeja_error(f"{problem}\n{answer.body.decode('utf-8', 'replace')}", logs)
    sys.stdout.buffer.write(abeja.printable(answer))
    sys.stdout.flush()


@app.command("run-local-server")
def run_local_server(
    handler: HandlerOption,
    port: Annotated[int, typer.Option("--port", "-p", help="HTTP port, 0 for a free one.")] = 0,
    environment: EnvironmentOption = None,
    organization: OrganizationOption = None,
    abeja_style: StyleOption = "auto",
) -> None:
    """Serve an ABEJA handler on localhost until Ctrl+C, like `abeja model run-local-server`."""
    _abeja_environment(handler, environment, organization)
    settings = _settings(
        target=handler, dialect="abeja", port=port, grpc_enabled=False, abeja_style=abeja_style
    )
    configure_logging(settings.log_level, log_format(settings))
    runtime = _runtime_or_exit(settings)

    def on_ready(endpoints: local.Endpoints) -> None:
        print(f"Endpoint : http://localhost:{endpoints.http_port}\nHandler  : {handler}", flush=True)

    try:
        local.run(local.serve(settings, on_ready, runtime=runtime))
    except (ModelLoadError, ListenError) as exc:
        _fail(exc.message, code=1)


@app.command("run")
def run_batch(
    handler: HandlerOption,
    output: Annotated[Path, typer.Option("--output", help="Folder the answers are written to.")],
    input: Annotated[
        list[Path] | None, typer.Option("--input", "-i", help="An input file or folder (repeatable).")
    ] = None,
    more: Annotated[list[Path] | None, typer.Argument(help="More input files or folders.")] = None,
    environment: EnvironmentOption = None,
    organization: OrganizationOption = None,
    quiet: QuietOption = False,
    abeja_style: StyleOption = "auto",
    json_output: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Run an ABEJA handler over input files (or the INPUT variable), one answer file per input."""
    from inferd.dialects.abeja import local as abeja

    logs = _abeja_in_process(handler, environment, organization, quiet)
    try:
        calls = [
            (path.stem, abeja.batch_call(path))
            for path in abeja.batch_inputs([*(input or []), *(more or [])])
        ]
        from_environment = abeja.environment_call() if not calls else None
    except abeja.LocalRunError as exc:
        _abeja_error(str(exc), logs)
    if from_environment is not None:
        calls = [("input", from_environment)]
    if not calls:
        _fail("no inputs: pass --input FILE or FOLDER (or set INPUT to a JSON body)")
    output.mkdir(parents=True, exist_ok=True)
    with contextlib.redirect_stdout(logs.output()):
        model = _load_handler(handler, abeja_style, logs)
        failed = _run_all(model, calls, output)
    written = len(calls) - failed
    if json_output:
        print(json.dumps({"inputs": len(calls), "written": written, "failed": failed, "output": str(output)}))
    else:
        summary = f"{len(calls)} inputs: {written} written to {output}, {failed} failed"
        errors.print(summary, highlight=False, soft_wrap=True)
    raise typer.Exit(1 if failed else 0)


def _run_all(model: AbejaModel, calls: list[tuple[str, Call]], output: Path) -> int:
    from inferd.dialects.abeja import local as abeja

    failed = 0
    with Progress(console=errors, transient=True) as progress:
        task = progress.add_task("running", total=len(calls))
        for stem, call in calls:
            result = abeja.run_one(model, stem, call, output)
            if result.error:
                failed += 1
                progress.console.print(
                    f"[red]failed[/] {stem}: {result.error}", highlight=False, soft_wrap=True
                )
            progress.advance(task)
    return failed


# --- talking to a running server ------------------------------------------------------------------

UrlOption = Annotated[
    str, typer.Option("--url", envvar="INFERD_URL", help="The server [default: http://127.0.0.1:8080].")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of tables.")]
DEFAULT_URL = "http://127.0.0.1:8080"
output = Console()


@app.command("models")
def list_models(url: UrlOption = DEFAULT_URL, json_output: JsonOption = False) -> None:
    """List what a running inferd server serves: state, dialect, tensors, traffic, how to call it."""
    from inferd import client

    try:
        described = client.models(url)
    except client.ClientError as exc:
        _fail(str(exc), code=1)
    if json_output:
        print(json.dumps(described))
        return
    table = Table(title=f"{url}: {described['server']['name']} {described['server']['version']}")
    for column in ("model", "dialect", "state", "inputs", "outputs", "requests", "mean ms", "called with"):
        table.add_column(
            column, justify="right" if column in ("requests", "mean ms") else "left", overflow="fold"
        )
    for model in described["models"]:
        form = model["try"]
        table.add_row(
            model["name"],
            model["dialect"],
            f"[green]{model['state'].lower()}[/]" if model["ready"] else f"[red]{model['state'].lower()}[/]",
            _tensors(model["inputs"]),
            _tensors(model["outputs"]),
            f"{model['requests']['ok']} ok"
            + (f", {model['requests']['error']} failed" * bool(model["requests"]["error"])),
            "-" if model["latency_ms"] is None else f"{model['latency_ms']:.3f}",
            f"{form['method']} {escape(form['path'])}" if form else "-",
        )
    output.print(table)


def _tensors(specs: list[dict[str, Any]]) -> str:
    return "\n".join(f"{spec['name']} {spec['datatype']} {spec['shape']}" for spec in specs) or "-"


@app.command("call")
def call_model(
    name: Annotated[str, typer.Argument(help="The model to call.")],
    url: UrlOption = DEFAULT_URL,
    input: Annotated[
        Path | None,
        typer.Option("--input", "-i", help="A .json file of data, or a file to send (an image, a video)."),
    ] = None,
    data: Annotated[str | None, typer.Option("--data", "-d", help="The data as JSON.")] = None,
    file: FileOption = None,
    save: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the answer's body to this file.")
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Send one request to a model of a running server, the way its dialect takes them (V2 for native
    models, Seldon messages, DEEPaaS arguments, Cortex samples, ABEJA bodies), and print the answer."""
    from inferd import client

    try:
        files = dict(_pair(item, "--file", "FIELD=PATH") for item in file or [])
        request, answer = client.call(
            url, name, client.given(data, input, {k: Path(v) for k, v in files.items()})
        )
    except client.ClientError as exc:
        _fail(str(exc), code=1)
    summary = f"{answer.status} · {answer.milliseconds:.1f} ms · {request.method} {request.path}"
    errors.print(f"[{'green' if answer.status < 400 else 'red'}]{escape(summary)}[/]", highlight=False)
    if save is not None:
        save.write_bytes(answer.body)
    elif answer.is_json:
        text = answer.body.decode("utf-8", "replace")
        if json_output or not sys.stdout.isatty():
            sys.stdout.write(text.rstrip("\n") + "\n")
        else:
            output.print_json(text)
    elif sys.stdout.isatty() and not answer.content_type.startswith("text/"):
        errors.print(f"{len(answer.body)} bytes of {answer.content_type}: save them with --output FILE")
    else:
        sys.stdout.buffer.write(answer.body)
        sys.stdout.flush()
    raise typer.Exit(0 if answer.status < 400 else 1)


def _pair(text: str, option: str, form: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        _fail(f"{option} takes {form}, not {text!r}")
    return key, value


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        _fail(f"cannot read input {path}: {exc.strerror}")


# --- packaging and deployment files ---------------------------------------------------------------

ProjectTarget = Annotated[
    str, typer.Argument(help="What `inferd serve` serves: a file, folder, module:Class or handler.")
]
NameOption = Annotated[str | None, typer.Option(help="Serve the model under this name (names resources).")]


def _deployment(target: str, **given: Any) -> Project:
    """``target``'s project, its dialect told if its code can be imported here (for the extras)."""

    def told(name: str, target: str) -> str:
        try:
            return resolve_dialect(name, target).name
        except Exception:  # user code that does not import here: the image's server will tell
            return name

    return _project(target, told, **given)


@export_app.command("k8s")
def export_k8s(
    target: ProjectTarget,
    kind: Annotated[
        str | None,
        typer.Option(
            "--target", help="deployment (+ Service + HPA), kserve or rayservice [default: by the engine]."
        ),
    ] = None,
    image: Annotated[str | None, typer.Option(help="The project's image [default: NAME:latest].")] = None,
    name: NameOption = None,
    dialect: Annotated[str | None, typer.Option(help=DIALECT_HELP)] = None,
    replicas: Annotated[int | None, typer.Option(help="Replicas [default: 1].")] = None,
    autoscale: Annotated[str | None, typer.Option(help="MIN:MAX replicas, scaled by load.")] = None,
    ray_haproxy: Annotated[
        bool | None, typer.Option("--ray-haproxy", help="rayservice: Ray Serve's HAProxy ingress.")
    ] = None,
    max_batch_size: Annotated[int | None, typer.Option(help="Adaptive batching, as for serve.")] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file [default: stdout].")
    ] = None,
) -> None:
    """Print (or write) Kubernetes manifests serving TARGET from its image, for `kubectl apply -f`."""
    from inferd.deploy import k8s
    from inferd.deploy.image import resource_name

    if kind is not None and kind not in k8s.KINDS:
        _fail(f"unknown --target {kind!r}: choose one of {', '.join(k8s.KINDS)}")
    project = _deployment(
        target,
        name=name,
        dialect=dialect,
        replicas=replicas,
        autoscale=autoscale,
        ray_haproxy=ray_haproxy,
        max_batch_size=max_batch_size,
    )
    kind = kind or ("rayservice" if project.engine == "ray" else "deployment")
    text = k8s.to_yaml(k8s.manifests(kind, project, image or f"{resource_name(project)}:latest"))
    if output is None:
        sys.stdout.write(text)
        return
    output.write_text(text)
    errors.print(f"wrote {output}", highlight=False, soft_wrap=True)


@app.command()
def build(
    target: ProjectTarget,
    name: NameOption = None,
    dialect: Annotated[str | None, typer.Option(help=DIALECT_HELP)] = None,
    engine: Annotated[str | None, typer.Option(help="ray: an image for a RayService.")] = None,
    extra: Annotated[
        list[str] | None, typer.Option(help="Another extra of inferd to install (repeatable).")
    ] = None,
    inferd_spec: Annotated[
        str | None,
        typer.Option(help="What pip installs for inferd (a wheel, a URL) [default: this version]."),
    ] = None,
    base: Annotated[
        str | None, typer.Option(help="The base image [default: python:X.Y-slim of this Python].")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing Dockerfile.")] = False,
) -> None:
    """Write a Dockerfile and a .dockerignore into TARGET's project folder, for `docker build`."""
    from inferd.deploy import docker
    from inferd.deploy.image import resource_name
    from inferd.deploy.wheel import WheelError

    project = _deployment(target, name=name, dialect=dialect, engine=engine)
    dockerfile = project.folder / docker.DOCKERFILE
    if dockerfile.exists() and not force:
        _fail(f"{dockerfile} exists: pass --force to replace it")
    try:
        files = docker.image_files(project, extra or [], inferd_spec, base)
    except WheelError as exc:
        _fail(str(exc), code=1)
    dockerfile.write_text(files.dockerfile)
    (project.folder / docker.DOCKERIGNORE).write_text(files.dockerignore)
    command = f"docker build -t {resource_name(project)} {project.folder}"
    errors.print(
        f"wrote {dockerfile} and {docker.DOCKERIGNORE}; build with: {command}",
        highlight=False,
        soft_wrap=True,
    )


def main() -> None:
    app()
