"""ABEJA's local tools, without Docker: ``inferd run-local``, ``run-local-server`` and ``run`` (a
handler over input files), as ``abeja model run-local``/``run-local-server`` and a batch job run them,
and ``inferd train-local`` (a training handler), as ``abeja training train-local`` ran one."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from inferd.cli.common import ABEJA_STYLE_HELP, errors, fail, runtime_or_exit, settings_from

if TYPE_CHECKING:  # the dialect's command-line helpers load only when a command runs
    from inferd.dialects.abeja import local as abeja
    from inferd.dialects.abeja.service import AbejaModel, Call

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
        fail(str(exc))


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


def run_local_server(
    handler: HandlerOption,
    port: Annotated[int, typer.Option("--port", "-p", help="HTTP port, 0 for a free one.")] = 0,
    environment: EnvironmentOption = None,
    organization: OrganizationOption = None,
    abeja_style: StyleOption = "auto",
) -> None:
    """Serve an ABEJA handler on localhost until Ctrl+C, like `abeja model run-local-server`."""
    from inferd.core.errors import ListenError, ModelLoadError
    from inferd.engines import local
    from inferd.server.logging import configure_logging, log_format

    _abeja_environment(handler, environment, organization)
    settings = settings_from(
        target=handler, dialect="abeja", port=port, grpc_enabled=False, abeja_style=abeja_style
    )
    configure_logging(settings.log_level, log_format(settings))
    runtime = runtime_or_exit(settings)

    def on_ready(endpoints: local.Endpoints) -> None:
        print(f"Endpoint : http://localhost:{endpoints.http_port}\nHandler  : {handler}", flush=True)

    try:
        local.run(local.serve(settings, on_ready, runtime=runtime))
    except (ModelLoadError, ListenError) as exc:
        fail(exc.message, code=1)


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
        fail("no inputs: pass --input FILE or FOLDER (or set INPUT to a JSON body)")
    output.mkdir(parents=True, exist_ok=True)
    with contextlib.redirect_stdout(logs.output()):
        model = _load_handler(handler, abeja_style, logs)
        failed = _run_all(model, calls, output)
    written = len(calls) - failed
    if json_output:
        print(json.dumps({"inputs": len(calls), "written": written, "failed": failed, "output": str(output)}))
    else:
        summary = f"{len(calls)} inputs: {written} written to {output}, {failed} failed"
        errors().print(summary, highlight=False, soft_wrap=True)
    raise typer.Exit(1 if failed else 0)


def _run_all(model: AbejaModel, calls: list[tuple[str, Call]], output: Path) -> int:
    from rich.progress import Progress

    from inferd.dialects.abeja import local as abeja

    failed = 0
    with Progress(console=errors(), transient=True) as progress:
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


def train_local(
    handler: Annotated[
        str, typer.Option("--handler", "-h", help="The training handler, file:function.")
    ] = "train:handler",
    environment: EnvironmentOption = None,
    datasets: Annotated[
        list[str] | None, typer.Option("--datasets", "--dataset", help="A dataset ALIAS:ID (repeatable).")
    ] = None,
    result: Annotated[
        Path, typer.Option("--result", help="The folder given as ABEJA_TRAINING_RESULT_DIR.")
    ] = Path("abejainc_training_result"),
    name: Annotated[
        str, typer.Option("--name", help="TRAINING_JOB_DEFINITION_NAME for the handler.")
    ] = "local",
    organization: OrganizationOption = None,
) -> None:
    """Run an ABEJA training handler(context) once in this process, from this folder, like
    `abeja training train-local` without Docker: its environment, datasets and result folder."""
    from inferd.dialects.abeja import local as abeja
    from inferd.platform.abeja import training_entry

    try:
        variables = abeja.user_variables(environment or [])
        chosen = abeja.user_variables(datasets or [])
    except abeja.LocalRunError as exc:
        fail(str(exc))
    result = result.resolve()
    result.mkdir(parents=True, exist_ok=True)
    given = json.dumps(chosen, sort_keys=True)
    defaults = {
        "TRAINING_JOB_DEFINITION_NAME": name,
        "TRAINING_JOB_DEFINITION_VERSION": "0",
        "TRAINING_JOB_ID": "local",
        "ABEJA_STORAGE_DIR_PATH": str(Path.home() / ".abeja" / ".cache"),
        "PYTHONUNBUFFERED": "x",
    }
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    os.environ.update(
        {"ABEJA_TRAINING_RESULT_DIR": str(result), "TRAINING_JOB_DATASETS": given, "DATASETS": given}
    )
    if organization:
        os.environ["ABEJA_ORGANIZATION_ID"] = organization
    os.environ.update(variables)
    reason = training_entry.run(handler)
    if reason is not None:
        print(f"[error] {reason}", file=sys.stderr)
        raise typer.Exit(1)
    print(f"training result: {result}", flush=True)
