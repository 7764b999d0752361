"""``inferd platform`` verbs of runs and triggers, as ABEJA's ``abeja model submit-run`` and
``create-trigger``: a version over input files into an output folder, once or for each new file in a
folder. Paths are made absolute here: the control process does not share this shell's directory."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from inferd.cli.common import fail
from inferd.cli.control_calls import _call, _quoted
from inferd.cli.help import Command
from inferd.cli.platform import DEFAULT_URL, JsonOption, UrlOption, _pairs, _show, app

RUN_COLUMNS = ("id", "version_id", "state", "inputs", "output", "reason", "created_at", "finished_at")
FINAL = frozenset({"succeeded", "failed", "cancelled"})


def _location(text: str) -> str:
    """A storage URI as it is, a local path made absolute."""
    from inferd.storage.locations import is_remote  # when used: the package loads the settings

    return text if is_remote(text) else str(Path(text).expanduser().resolve())


@app.command("submit-run", cls=Command)
def submit_run(
    deployment: str,
    version: Annotated[str, typer.Argument(help="The version's id.")],
    input: Annotated[
        list[str], typer.Option("--input", "-i", help="A file, folder or storage URI (repeatable).")
    ],
    output: Annotated[str, typer.Option("--output", "-o", help="The folder or storage prefix for answers.")],
    param: Annotated[
        list[str] | None, typer.Option("--param", "-e", help="KEY=VALUE for the run's process; repeatable.")
    ] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for it to finish; fail if it failed.")] = False,
    url: UrlOption = DEFAULT_URL,
    json_output: JsonOption = False,
) -> None:
    """Run VERSION of DEPLOYMENT over input files, one answer file per input in the output folder."""
    from inferd.cli.platform_ids import version_id

    body = {
        "version": version_id(url, deployment, version),
        "inputs": [_location(item) for item in input],
        "output": _location(output),
        "parameters": _pairs(param, "--param"),
    }
    run = _call(url, "POST", f"/deployments/{_quoted(deployment)}/runs", body)
    if wait:
        while run["state"] not in FINAL:
            time.sleep(0.5)
            run = _call(url, "GET", f"/runs/{_quoted(run['id'])}")
    _show(run, json_output)
    if wait and run["state"] != "succeeded":
        fail(f"run {run['id']} {run['state']}: {run['reason']}", code=1)


@app.command(cls=Command)
def runs(deployment: str, url: UrlOption = DEFAULT_URL, json_output: JsonOption = False) -> None:
    """List a deployment's runs with their state."""
    found = _call(url, "GET", f"/deployments/{_quoted(deployment)}/runs")
    _show(found, json_output, RUN_COLUMNS, drop=("created_at", "finished_at", "inputs", "output"))


@app.command("run", cls=Command)
def run(run_id: Annotated[str, typer.Argument(help="The run's id.")], url: UrlOption = DEFAULT_URL) -> None:
    """A run, with its state and reason."""
    _show(_call(url, "GET", f"/runs/{_quoted(run_id)}"), False)


@app.command("run-logs", cls=Command)
def run_logs(
    run_id: Annotated[str, typer.Argument(help="The run's id.")],
    lines: Annotated[int, typer.Option(help="How many lines.")] = 100,
    url: UrlOption = DEFAULT_URL,
) -> None:
    """The last lines of a run's log: its process's output and one line per input."""
    found: dict[str, Any] = _call(url, "GET", f"/runs/{_quoted(run_id)}/logs?lines={lines}")
    sys.stdout.write("".join(f"{line}\n" for line in found["lines"]))


@app.command("cancel-run", cls=Command)
def cancel_run(
    run_id: Annotated[str, typer.Argument(help="The run's id.")],
    url: UrlOption = DEFAULT_URL,
    json_output: JsonOption = False,
) -> None:
    """Cancel a pending or running run (its process is stopped)."""
    _show(_call(url, "POST", f"/runs/{_quoted(run_id)}/cancel"), json_output)


@app.command("create-trigger", cls=Command)
def create_trigger(
    deployment: str,
    version: Annotated[str, typer.Argument(help="The version's id.")],
    input: Annotated[str, typer.Option("--input", "-i", help="The folder (or storage prefix/) to watch.")],
    output: Annotated[str, typer.Option("--output", "-o", help="The folder or storage prefix for answers.")],
    param: Annotated[
        list[str] | None, typer.Option("--param", "-e", help="KEY=VALUE for each run's process; repeatable.")
    ] = None,
    disabled: Annotated[bool, typer.Option("--disabled", help="Create it disabled.")] = False,
    url: UrlOption = DEFAULT_URL,
    json_output: JsonOption = False,
) -> None:
    """Run VERSION for each new file that appears under the input folder or prefix."""
    watched = _location(input)
    if "://" in watched and not watched.endswith("/"):
        watched += "/"
    from inferd.cli.platform_ids import version_id

    body = {
        "version": version_id(url, deployment, version),
        "input": watched,
        "output": _location(output),
        "enabled": not disabled,
        "parameters": _pairs(param, "--param"),
    }
    _show(_call(url, "POST", f"/deployments/{_quoted(deployment)}/triggers", body), json_output)


@app.command(cls=Command)
def triggers(deployment: str, url: UrlOption = DEFAULT_URL, json_output: JsonOption = False) -> None:
    """List a deployment's triggers."""
    found = _call(url, "GET", f"/deployments/{_quoted(deployment)}/triggers")
    columns = ("id", "version_id", "input", "output", "enabled", "created_at")
    _show(found, json_output, columns, drop=("created_at", "enabled"))


@app.command("enable-trigger", cls=Command)
def enable_trigger(
    trigger: str,
    off: Annotated[bool, typer.Option("--off", help="Disable it instead.")] = False,
    url: UrlOption = DEFAULT_URL,
    json_output: JsonOption = False,
) -> None:
    """Enable (or with --off disable) a trigger."""
    _show(_call(url, "PATCH", f"/triggers/{_quoted(trigger)}", {"enabled": not off}), json_output)


@app.command("delete-trigger", cls=Command)
def delete_trigger(trigger: str, url: UrlOption = DEFAULT_URL) -> None:
    """Delete a trigger; the runs it started stay."""
    _call(url, "DELETE", f"/triggers/{_quoted(trigger)}")
