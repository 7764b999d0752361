"""The client of running servers: ``inferd models``, ``inferd call`` and ``inferd train --url``."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from inferd.cli.common import errors, escape, fail, pair
from inferd.cli.params import FileOption

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

UrlOption = Annotated[
    str, typer.Option("--url", envvar="INFERD_URL", help="The server [default: http://127.0.0.1:8080].")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of tables.")]
DEFAULT_URL = "http://127.0.0.1:8080"


@functools.cache
def output() -> Console:
    """The console of the answers, on stdout; made on first use (rich is not imported to serve)."""
    from rich.console import Console

    return Console()


def list_models(url: UrlOption = DEFAULT_URL, json_output: JsonOption = False) -> None:
    """List what a running inferd server serves: state, dialect, tensors, traffic, how to call it."""
    from rich.table import Table

    from inferd import client

    try:
        described = client.models(url)
    except client.ClientError as exc:
        fail(str(exc), code=1)
    if json_output:
        print(json.dumps(described))
        return
    table = Table(title=f"{url}: {described['server']['name']} {described['server']['version']}")
    columns = ("model", "version", "dialect", "state", "source", "inputs", "outputs", "requests", "mean ms")
    for column in (*columns, "called with"):
        table.add_column(
            column,
            justify="right" if column in ("requests", "mean ms") else "left",
            overflow="fold",
            no_wrap=column == "model",  # a name is copied into commands: never broken
        )
    for model in described["models"]:
        form = model["try"]
        table.add_row(
            model["name"],
            model["version"] or "-",
            model["dialect"],
            _state(model),
            _source(model),
            _tensors(model["inputs"]),
            _tensors(model["outputs"]),
            f"{model['requests']['ok']} ok"
            + (f", {model['requests']['error']} failed" * bool(model["requests"]["error"])),
            "-" if model["latency_ms"] is None else f"{model['latency_ms']:.3f}",
            f"{form['method']} {escape(form['path'])}" if form else "-",
        )
    _print_whole(table)


def _state(model: dict[str, Any]) -> str:
    """Ready in green; anything else in red, with why (unloaded, not loaded yet, the load's error)."""
    if model["ready"]:
        return f"[green]{model['state'].lower()}[/]"
    reason = f": {escape(model['reason'])}" if model["reason"] else ""
    return f"[red]{model['state'].lower()}[/]{reason}"


def _source(model: dict[str, Any]) -> str:
    """Where the model's files come from, and what the model cache did for them."""
    source = escape(model.get("source") or "-")
    return f"{source} ({escape(model['cache'])})" if model.get("cache") else source


def _print_whole(table: Table) -> None:
    """Print ``table`` fitted to the terminal; piped (no terminal to fit), at its natural width, so no
    cell is folded mid-word for the program reading it."""
    from rich.console import Console
    from rich.measure import Measurement

    if output().is_terminal:
        output().print(table)
        return
    natural = Measurement.get(output(), output().options.update_width(10_000), table).maximum
    Console(width=max(natural, output().width), color_system=None).print(table)


def _tensors(specs: list[dict[str, Any]]) -> str:
    return "\n".join(f"{spec['name']} {spec['datatype']} {spec['shape']}" for spec in specs) or "-"


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
        files = dict(pair(item, "--file", "FIELD=PATH") for item in file or [])
        request, answer = client.call(
            url, name, client.given(data, input, {k: Path(v) for k, v in files.items()})
        )
    except client.ClientError as exc:
        fail(str(exc), code=1)
    summary = f"{answer.status} · {answer.milliseconds:.1f} ms · {request.method} {request.path}"
    errors().print(f"[{'green' if answer.status < 400 else 'red'}]{escape(summary)}[/]", highlight=False)
    if save is not None:
        save.write_bytes(answer.body)
    elif answer.is_json:
        text = answer.body.decode("utf-8", "replace")
        if json_output or not sys.stdout.isatty():
            sys.stdout.write(text.rstrip("\n") + "\n")
        else:
            output().print_json(text)
    elif sys.stdout.isatty() and not answer.content_type.startswith("text/"):
        errors().print(f"{len(answer.body)} bytes of {answer.content_type}: save them with --output FILE")
    else:
        sys.stdout.buffer.write(answer.body)
        sys.stdout.flush()
    raise typer.Exit(0 if answer.status < 400 else 1)


def remote_training(url: str, name: str, args: list[str], follow: bool) -> None:
    """Start a training job of ``name`` on the server at ``url``; print its record, followed to its end
    with ``follow``."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from inferd import client

    arguments: dict[str, list[str]] = {}
    for item in args:
        key, value = pair(item, "--arg", "KEY=VALUE")
        arguments.setdefault(key, []).append(value)
    try:
        path, record = client.start_training(url, name, arguments)
        if follow:
            job = record["uuid"]
            columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
            with Progress(*columns, console=errors(), transient=True) as progress:
                task = progress.add_task(f"training {name} ({job})", total=None)
                for record in client.follow_training(url, path, job):
                    progress.update(task, description=f"training {name} ({job}): {record['status']}")
    except client.ClientError as exc:
        fail(str(exc), code=1)
    sys.stdout.write(json.dumps(record, indent=2) + "\n")
    raise typer.Exit(1 if follow and record.get("status") != "done" else 0)
