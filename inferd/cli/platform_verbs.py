"""The platform's shorthands, at the top level as Cortex and kubectl users type them: ``deploy`` (a
cortex.yaml, one deployment per API, as a rolling update), ``get``, ``logs``, ``delete``, and
``apply`` (a SeldonDeployment or a KServe InferenceService). Each is a client of the control API
(``--url``, ``INFERD_TOKEN``); the work is `inferd.platform.workflows`, imported when a command runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from inferd.cli.common import fail
from inferd.cli.help import Command

if TYPE_CHECKING:
    from inferd.platform.workflows import Control, Layout, Outcome
    from inferd.platform.workflows.status import DeploymentStatus

DEFAULT_URL = "http://127.0.0.1:8070"
#: What ``inferd get`` says when the control process has no deployment (an empty table said nothing).
NOTHING_YET = (
    "No deployments yet. Create one with `inferd deploy` (a folder with a cortex.yaml), `inferd apply "
    "FILE` (a SeldonDeployment or InferenceService), or `inferd platform create-deployment NAME` then "
    "`inferd platform push NAME FOLDER --label 1.0` (see docs/platform.md)."
)
UrlOption = Annotated[str, typer.Option("--url", help="The control API (inferd platform serve).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the answer as JSON.")]
TimeoutOption = Annotated[
    float, typer.Option("--timeout", help="Seconds a new service may take to be ready.")
]


def _control(url: str) -> Control:
    from inferd.platform.workflows import Control

    return Control(url)


def _quiet(text: str) -> None:
    pass


def _saying(name: str) -> Callable[[str], None]:
    def say(text: str) -> None:
        print(f"{name}: {text}", flush=True)

    return say


def _roll_out(url: str, layouts: list[Layout], timeout: float, json_output: bool) -> None:
    from inferd.platform.workflows import ControlError, WorkflowError, roll_out

    outcomes: list[Outcome] = []
    with _control(url) as control:
        for layout in layouts:
            say = _quiet if json_output else _saying(layout.deployment)
            try:
                outcome = roll_out(control, layout, timeout=timeout, say=say)
            except (WorkflowError, ControlError) as exc:
                fail(f"{layout.deployment}: {exc}; what served before still serves", code=1)
            outcomes.append(outcome)
            if not json_output:
                print(f"{layout.deployment}: {'updated' if outcome.changed else 'up to date'}", flush=True)
    if json_output:
        print(json.dumps([vars(outcome) for outcome in outcomes]))


def deploy(
    target: Annotated[
        Path, typer.Argument(exists=True, help="A project folder holding a cortex.yaml, or the file.")
    ] = Path("."),
    api: Annotated[str | None, typer.Option("--api", help="Deploy only this API.")] = None,
    timeout: TimeoutOption = 300.0,
    url: UrlOption = DEFAULT_URL,
    json_output: JsonOption = False,
) -> None:
    """Create or update a deployment per API of a cortex.yaml: a rolling update (the new version is
    running before its endpoint /e/API/ switches to it; the old one answers what it holds, then
    stops). Unchanged content changes nothing."""
    from inferd.platform.workflows import WorkflowError
    from inferd.platform.workflows.cortex import cortex_layouts

    try:
        layouts = cortex_layouts(target, api)
    except WorkflowError as exc:
        fail(str(exc))
    _roll_out(url, layouts, timeout, json_output)


def apply(
    file: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="A SeldonDeployment or InferenceService.")
    ],
    timeout: TimeoutOption = 300.0,
    url: UrlOption = DEFAULT_URL,
    json_output: JsonOption = False,
) -> None:
    """Run a SeldonDeployment (predictors split by traffic, a shadow) or a KServe InferenceService
    (canaryTrafficPercent) as services behind the endpoint /e/NAME/ (NAME: metadata.name)."""
    from inferd.platform.workflows import WorkflowError
    from inferd.platform.workflows.manifests import manifest_layout

    try:
        layout = manifest_layout(file)
    except WorkflowError as exc:
        fail(str(exc))
    _roll_out(url, [layout], timeout, json_output)


def get(
    name: Annotated[
        str | None, typer.Argument(help="A deployment (a Cortex API...); all if left out.")
    ] = None,
    url: UrlOption = DEFAULT_URL,
    json_output: JsonOption = False,
) -> None:
    """Status, replicas, requests and latency of each deployment (with NAME: of each of its services)."""
    from inferd.platform.workflows import ControlError
    from inferd.platform.workflows.status import all_statuses, deployment_status

    try:
        with _control(url) as control:
            found = [deployment_status(control, name)] if name else all_statuses(control)
    except ControlError as exc:
        fail(str(exc), code=1)
    if json_output:
        print(json.dumps([status.as_json() for status in found] if name is None else found[0].as_json()))
    elif name is None:
        _overview(found)
    else:
        _details(found[0])


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} ms"


def _overview(found: list[DeploymentStatus]) -> None:
    from inferd.cli.tables import ID, Column, print_table

    if not found:
        print(NOTHING_YET)
        return
    columns = [Column("name", ID), Column("status"), Column("replicas"), Column("requests", drop=2)]
    columns += [Column("errors", drop=1), Column("p50", drop=4), Column("p99", drop=3), Column("endpoint")]
    rows = [
        [
            status.name,
            status.status,
            status.replicas,
            str(status.requests),
            str(status.errors),
            _ms(status.latency("p50")),
            _ms(status.latency("p99")),
            f"/e/{status.endpoint}/" if status.endpoint else "-",
        ]
        for status in found
    ]
    print_table(columns, rows)


def _details(status: DeploymentStatus) -> None:
    from inferd.cli.tables import ID, TEXT, Column, print_table

    print(f"{status.name}: {status.status}, replicas {status.replicas}, endpoint ", end="")
    print(f"/e/{status.endpoint}/" if status.endpoint else "(none)")
    columns = [Column("service", ID), Column("version", ID), Column("weight"), Column("state")]
    columns += [Column("replicas"), Column("workers", drop=4), Column("requests", drop=3)]
    columns += [Column("p50", drop=2), Column("p99", drop=1), Column("reason", TEXT)]
    rows = []
    for service in status.services:
        latency: dict[str, Any] = (service.metrics or {}).get("latency_ms") or {}
        weight = "shadow" if service.shadow else ("-" if service.weight is None else str(service.weight))
        rows.append(
            [
                service.id,
                service.version,
                weight,
                service.state,
                f"{service.ready_replicas}/{service.replicas}",
                str(service.workers),
                str(service.requests),
                _ms(latency.get("p50")),
                _ms(latency.get("p99")),
                service.reason or "-",
            ]
        )
    print_table(columns, rows)


def logs(
    name: Annotated[str, typer.Argument(help="A deployment (a Cortex API...).")],
    lines: Annotated[int, typer.Option(help="How many past lines to show first.")] = 20,
    follow: Annotated[bool, typer.Option("--follow/--no-follow", help="Keep printing new lines.")] = True,
    url: UrlOption = DEFAULT_URL,
) -> None:
    """Follow the log of the service answering NAME's endpoint (the one with the most weight), and of
    the next one when a deploy replaces it; Ctrl+C to stop."""
    from inferd.platform.workflows import ControlError
    from inferd.platform.workflows.control import quoted

    try:
        with _control(url) as control:
            service_id = _answering(control, name)
            if service_id is None:
                fail(f"{name} has no running service", code=1)
            if not follow:
                found = control.call("GET", f"/services/{quoted(service_id)}/logs?lines={lines}")
                print("\n".join(found["lines"]))
                return
            previous: str | None = None
            while service_id is not None and service_id != previous:
                for line in control.follow(service_id, lines if previous is None else 0):
                    print(line, flush=True)
                # the stream ends when the service stops: a deploy may have put another in its place
                previous, service_id = service_id, _answering(control, name)
    except ControlError as exc:
        fail(str(exc), code=1)
    except KeyboardInterrupt:
        return


def _answering(control: Control, name: str) -> str | None:
    endpoint = control.endpoint(name, name) or next(iter(control.endpoints(name)), None)
    if endpoint is not None and endpoint["routes"]:
        return str(max(endpoint["routes"], key=lambda route: route["weight"])["service_id"])
    live = [s for s in control.services(name) if s["state"] in ("running", "starting")]
    return str(live[-1]["id"]) if live else None


def delete(
    name: Annotated[str, typer.Argument(help="A deployment (a Cortex API...).")],
    url: UrlOption = DEFAULT_URL,
) -> None:
    """Remove a deployment: its endpoints, its services (each answering what it holds before it
    stops), its versions."""
    from inferd.platform.workflows import ControlError
    from inferd.platform.workflows.status import remove_deployment

    try:
        with _control(url) as control:
            if control.deployment(name) is None:
                fail(f"no deployment named {name!r}", code=1)
            for what in remove_deployment(control, name):
                print(f"deleted {what}")
    except ControlError as exc:
        fail(str(exc), code=1)


def register(app: typer.Typer) -> None:
    """Add the verbs to the root command."""
    for command in (deploy, get, logs, delete, apply):
        app.command(cls=Command)(command)
