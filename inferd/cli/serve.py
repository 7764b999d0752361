"""``inferd serve`` and ``inferd predict``: argv → Settings → engine. No serving logic lives here: the
engines serve, this module only turns options, a project's ``inferd.yaml`` and a platform's environment
into one Settings object."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from inferd.cli import help as panel
from inferd.cli import hints
from inferd.cli.common import (
    ABEJA_STYLE_HELP,
    DIALECT_HELP,
    ArgOption,
    FileOption,
    fail,
    load_project,
    read,
    runtime_or_exit,
    settings_from,
)

if TYPE_CHECKING:
    from inferd.core.project import Project
    from inferd.core.settings import Settings


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
        str | None,
        typer.Option(help="Interface to bind [default: 127.0.0.1].", rich_help_panel=panel.SERVER),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(help="HTTP port, 0 for a free one [default: 8080].", rich_help_panel=panel.SERVER),
    ] = None,
    grpc_port: Annotated[
        int | None,
        typer.Option(help="gRPC port, 0 for a free one [default: 8081].", rich_help_panel=panel.SERVER),
    ] = None,
    no_grpc: Annotated[
        bool, typer.Option("--no-grpc", help="Serve HTTP only.", rich_help_panel=panel.SERVER)
    ] = False,
    metrics_port: Annotated[
        int | None,
        typer.Option(help="Also serve the Prometheus endpoint on this port.", rich_help_panel=panel.SERVER),
    ] = None,
    access_log: Annotated[
        bool | None,
        typer.Option("--access-log/--no-access-log", help="Log every request.", rich_help_panel=panel.SERVER),
    ] = None,
    log_level: Annotated[
        str | None, typer.Option(help="debug, info, warning or error.", rich_help_panel=panel.SERVER)
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            help="Where state (training jobs) is kept [default: ./.inferd].", rich_help_panel=panel.SERVER
        ),
    ] = None,
    install_requirements: Annotated[
        bool | None,
        typer.Option(
            "--install-requirements",
            help="pip-install the project's requirements.txt first.",
            rich_help_panel=panel.SERVER,
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(help="Server processes sharing the ports [default: 1].", rich_help_panel=panel.WORKERS),
    ] = None,
    isolate: Annotated[
        bool | None,
        typer.Option(
            "--isolate/--no-isolate",
            help="Run user code in a model process per worker: a crash, hang or memory overrun "
            "answers 503 and the process is replaced.",
            rich_help_panel=panel.WORKERS,
        ),
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(
            help="local (this machine) or ray (Ray Serve replicas) [default: local].",
            rich_help_panel=panel.WORKERS,
        ),
    ] = None,
    replicas: Annotated[
        int | None, typer.Option(help="Ray Serve replicas [default: 1].", rich_help_panel=panel.WORKERS)
    ] = None,
    autoscale: Annotated[
        str | None,
        typer.Option(
            help="MIN:MAX Ray Serve replicas, scaled by load (replaces --replicas).",
            rich_help_panel=panel.WORKERS,
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            help="A Ray cluster to deploy to [default: a local Ray of its own].",
            rich_help_panel=panel.WORKERS,
        ),
    ] = None,
    ray_haproxy: Annotated[
        bool | None,
        typer.Option(
            "--ray-haproxy", help="Ray Serve's HAProxy ingress (Ray 2.55+).", rich_help_panel=panel.WORKERS
        ),
    ] = None,
    ray_num_cpus: Annotated[
        float | None,
        typer.Option(
            help="CPUs each Ray replica reserves, fractions allowed [default: 1].",
            rich_help_panel=panel.WORKERS,
        ),
    ] = None,
    max_batch_size: Annotated[
        int | None,
        typer.Option(
            help="Batch up to this many rows per model call [default: 1, off].",
            rich_help_panel=panel.BATCHING,
        ),
    ] = None,
    max_batch_time_ms: Annotated[
        float | None,
        typer.Option(
            help="How long a batch waits for more requests [default: 1].", rich_help_panel=panel.BATCHING
        ),
    ] = None,
    model_settings: Annotated[
        Path | None,
        typer.Option(help="YAML/JSON file of per-model settings (batching).", rich_help_panel=panel.BATCHING),
    ] = None,
    auth_token: Annotated[
        list[str] | None,
        typer.Option(
            help="Require 'Authorization: Bearer TOKEN' (repeatable); INFERD_AUTH_TOKENS keeps it out of ps.",
            rich_help_panel=panel.ACCESS,
        ),
    ] = None,
    allowed_origin: Annotated[
        list[str] | None,
        typer.Option(
            help="Another site (scheme://host[:port]) whose pages may call control routes (repeatable).",
            rich_help_panel=panel.ACCESS,
        ),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="A Host name answered besides loopback ones (repeatable; .example.com, *).",
            rich_help_panel=panel.ACCESS,
        ),
    ] = None,
    service_type: Annotated[
        str | None,
        typer.Option(
            help="Component type: MODEL, ROUTER, TRANSFORMER, OUTPUT_TRANSFORMER or COMBINER.",
            rich_help_panel=panel.SELDON,
        ),
    ] = None,
    parameters: Annotated[
        str | None,
        typer.Option(
            help='Component parameters: [{"name": ..., "value": ..., "type": "INT"}].',
            rich_help_panel=panel.SELDON,
        ),
    ] = None,
    http_port: Annotated[
        int | None, typer.Option(help="Seldon's name for --port.", rich_help_panel=panel.SELDON)
    ] = None,
    model_name: Annotated[
        str | None,
        typer.Option(
            help="The deepaas.v2.model entry point to serve [default: all].", rich_help_panel=panel.DEEPAAS
        ),
    ] = None,
    base_path: Annotated[
        str | None, typer.Option(help="A prefix for its routes.", rich_help_panel=panel.DEEPAAS)
    ] = None,
    predict_endpoint: Annotated[
        bool | None,
        typer.Option(
            "--predict-endpoint/--nopredict-endpoint", help="Predict routes.", rich_help_panel=panel.DEEPAAS
        ),
    ] = None,
    train_endpoint: Annotated[
        bool | None,
        typer.Option(
            "--train-endpoint/--notrain-endpoint", help="Training routes.", rich_help_panel=panel.DEEPAAS
        ),
    ] = None,
    doc_endpoint: Annotated[
        bool | None,
        typer.Option(
            "--doc-endpoint/--nodoc-endpoint", help="Swagger UI at /api.", rich_help_panel=panel.DEEPAAS
        ),
    ] = None,
    warm: Annotated[
        bool | None,
        typer.Option("--warm/--nowarm", help="Call warm() first.", rich_help_panel=panel.DEEPAAS),
    ] = None,
    listen_ip: Annotated[
        str | None, typer.Option(help="DEEPaaS's name for --host.", rich_help_panel=panel.DEEPAAS)
    ] = None,
    listen_port: Annotated[
        int | None, typer.Option(help="DEEPaaS's name for --port.", rich_help_panel=panel.DEEPAAS)
    ] = None,
    abeja_style: Annotated[
        str | None, typer.Option(help=ABEJA_STYLE_HELP, rich_help_panel=panel.ABEJA)
    ] = None,
) -> None:
    """Serve TARGET over HTTP and gRPC until SIGTERM or Ctrl+C (over HTTP only on Ray Serve)."""
    from inferd.core.errors import EngineError, ListenError, ModelLoadError
    from inferd.dialects import resolve_dialect
    from inferd.engines import local
    from inferd.server.logging import configure_logging, log_format

    if not target and os.environ.get("HANDLER"):
        target, dialect = os.environ["HANDLER"], dialect or "abeja"
    if not target and os.environ.get("MODEL_NAME"):  # a Seldon s2i image
        target, dialect = os.environ["MODEL_NAME"], dialect or "seldon"
    if not target and os.environ.get("DEEPAAS_V2_MODEL"):
        dialect = dialect or "deepaas"
    if not target and not os.environ.get("INFERD_TARGET") and dialect != "deepaas":
        fail(
            "missing TARGET: name what to serve (or set HANDLER=module:function for an ABEJA handler, "
            "MODEL_NAME=Class for a Seldon component, or pass --dialect deepaas for DEEPaaS entry points)"
        )
    instead = hints.instead(target, dialect)
    project = load_project(
        target,
        lambda name, target: resolve_dialect(name, target).name,
        instead,
        dialect=dialect,
        name=name,
        host=_first(host, listen_ip),
        port=_first(port, http_port, listen_port),
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
    settings = _with_platform_environment(project, instead)
    runtime = runtime_or_exit(settings, instead)
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
        fail(exc.message, code=1)
    raise typer.Exit(code)


def _first(*given: Any) -> Any:
    """The first option given of an option and the platforms' names for it."""
    return next((value for value in given if value is not None), None)


def _with_platform_environment(project: Project, instead: str | None = None) -> Settings:
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
    from inferd.cli.deepaas import deepaas_call
    from inferd.core.errors import InferdError
    from inferd.engines import local
    from inferd.protocols.status import error_message
    from inferd.protocols.v2.http_codec import decode_request, encode_response
    from inferd.server.logging import configure_logging

    if dialect == "deepaas":
        deepaas_call("predict", target, arg or [], file or [])
        return
    if input is None:
        fail("missing --input: a V2 inference request JSON file, or - for stdin")
    settings = settings_from(target=target, dialect=dialect, log_level="warning")
    configure_logging(settings.log_level)
    runtime = runtime_or_exit(settings)
    body = sys.stdin.buffer.read() if input == "-" else read(Path(input))

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
        fail(error_message(exc), code=1)
    sys.stdout.write(content.decode() + "\n")
