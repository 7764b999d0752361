"""``inferd platform``: run the control process (``serve``) and drive it over its HTTP API (every other
verb). The verbs follow ABEJA's model CLI: a deployment holds versions (``push`` uploads a project
folder), a service runs a version (``start``/``stop``), an endpoint routes to services by weight
(``route``). ``--url`` names the control API; ``INFERD_TOKEN`` is sent as its bearer token, else the
token a control process on this machine generated (`inferd.platform.admin_token.local_token`)."""

from __future__ import annotations

import json
import tempfile
import urllib.parse
from pathlib import Path
from typing import Annotated, Any

import typer

from inferd.cli.common import fail
from inferd.cli.control_calls import _call, _quoted
from inferd.cli.help import Command, Group

app = typer.Typer(
    help="Deployments, versions, services and endpoints (the platform).", no_args_is_help=True, cls=Group
)
DEFAULT_URL = "http://127.0.0.1:8070"
UrlOption = Annotated[str, typer.Option("--url", help="The control API (inferd platform serve).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the answer as JSON.")]


MinReplicas = Annotated[int, typer.Option(help="Fewest replicas (separate servers behind its endpoints).")]
MaxReplicas = Annotated[
    int | None, typer.Option(help="Most replicas the autoscaler runs (default: --min-replicas, no scaling).")
]
TargetConcurrency = Annotated[
    float, typer.Option(help="Requests in flight per replica the autoscaler aims for.")
]


#: Columns of prose (wrapped in a narrow terminal); those of ids and names are never cut.
TEXT_COLUMNS = frozenset({"reason", "description", "routes", "inputs", "input", "output", "target"})


def _show(found: Any, json_output: bool, columns: tuple[str, ...] = (), drop: tuple[str, ...] = ()) -> None:
    """``found`` as JSON, or a list of records as a table of ``columns``; ``drop``: the columns left
    out in a terminal too narrow for them all, the first first (`inferd.cli.tables`)."""
    from inferd.cli.tables import ID, PLAIN, TEXT, Column, print_table

    if json_output or not isinstance(found, list):
        print(json.dumps(found, indent=None if json_output else 2))
        return

    def kind(name: str) -> str:
        if name in ("id", "name") or name.endswith("_id"):
            return ID
        return TEXT if name in TEXT_COLUMNS else PLAIN

    order = {name: len(drop) - index for index, name in enumerate(drop)}  # the first: the highest
    shown = [Column(name, kind(name), order.get(name, 0)) for name in columns]
    print_table(shown, [[_cell(item.get(column)) for column in columns] for item in found])


def _gateway_url(url: str) -> str:
    """The gateway's address as this machine reaches the control API at ``url``: its host, the
    gateway's port (the console's ``info``)."""
    host = urllib.parse.urlsplit(url).hostname or "127.0.0.1"
    info = _call(url, "GET", "/console/api/info", prefix="")
    return f"http://{f'[{host}]' if ':' in host else host}:{info['gateway_port']}"


def _cell(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(
            f"{item.get('service_id')}={item.get('weight')}" if isinstance(item, dict) else str(item)
            for item in value
        )
    return "-" if value in (None, "") else str(value)


def _pairs(values: list[str] | None, what: str) -> dict[str, str]:
    found = {}
    for value in values or []:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            fail(f"{what} takes KEY=VALUE, not '{value}'")
        found[key] = rest
    return found


@app.command(cls=Command)
def serve(
    host: Annotated[str, typer.Option(help="Address of the API and the gateway.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port of the control API.")] = 8070,
    gateway_port: Annotated[int, typer.Option(help="Port of the endpoints' gateway.")] = 8000,
    grpc_gateway_port: Annotated[
        int, typer.Option(help="Port of the endpoints' gRPC gateway (metadata inferd-endpoint: NAME).")
    ] = 8001,
    data_path: Annotated[
        str, typer.Option(help="gateway (embedded) or haproxy (Debian's package, weights without reloads).")
    ] = "gateway",
    data_dir: Annotated[Path, typer.Option(help="Where the platform keeps its state and bundles.")] = Path(
        ".inferd"
    ),
    auth_token: Annotated[
        list[str] | None,
        typer.Option(
            "--auth-token",
            help="A bearer token the API, console and gateway take (repeatable; INFERD_AUTH_TOKENS). "
            "Without one, the API takes a token generated in DATA_DIR/platform/control-token.",
        ),
    ] = None,
    no_token: Annotated[
        bool,
        typer.Option(
            "--no-token",
            help="No token at all when none is given (INFERD_PLATFORM_OPEN): every local process may "
            "deploy and run code. Loopback only.",
        ),
    ] = False,
) -> None:
    """Run the control process: the control API and the endpoints' gateway, until Ctrl+C (the services
    keep running and are adopted by the next run)."""
    from inferd.engines.local import run
    from inferd.platform.admin_token import host_refusal
    from inferd.platform.process import Listening
    from inferd.platform.process import serve as serve_platform
    from inferd.platform.settings import PlatformSettings
    from inferd.server.logging import configure_logging

    given: dict[str, Any] = {"auth_tokens": auth_token} if auth_token else {}
    if no_token:
        given["platform_open"] = True
    try:
        settings = PlatformSettings(
            host=host,
            port=port,
            gateway_port=gateway_port,
            grpc_gateway_port=grpc_gateway_port,
            data_dir=data_dir,
            data_path=data_path,
            **given,
        )
    except ValueError as exc:
        fail(f"invalid option: {exc}")
    refused = host_refusal(settings.host, bool(settings.auth_tokens))
    if refused:
        fail(refused, instead=f'inferd platform serve --host {host} --auth-token "$(openssl rand -hex 32)"')
    configure_logging(settings.log_level)

    def ready(listening: Listening) -> None:
        if listening.token_line:
            print(listening.token_line, flush=True)
        print(listening.ready_line(), flush=True)

    run(serve_platform(settings, ready))


@app.command("create-deployment", cls=Command)
def create_deployment(
    name: str, description: str = "", url: UrlOption = DEFAULT_URL, json_output: JsonOption = False
) -> None:
    """Create a deployment: a named application holding versions."""
    _show(_call(url, "POST", "/deployments", {"name": name, "description": description}), json_output)


@app.command(cls=Command)
def deployments(url: UrlOption = DEFAULT_URL, json_output: JsonOption = False) -> None:
    """List the deployments."""
    found = _call(url, "GET", "/deployments")
    _show(found, json_output, ("id", "name", "description", "created_at"), drop=("created_at",))


@app.command("delete-deployment", cls=Command)
def delete_deployment(deployment: str, url: UrlOption = DEFAULT_URL) -> None:
    """Delete a deployment, its versions and its stopped services."""
    _call(url, "DELETE", f"/deployments/{_quoted(deployment)}")


@app.command(cls=Command)
def push(
    deployment: str,
    folder: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="The project folder.")],
    label: Annotated[str, typer.Option(help="The version's label (unique in its deployment).")],
    target: Annotated[str, typer.Option(help="What inferd serve runs inside the folder.")] = ".",
    dialect: Annotated[str, typer.Option(help="The project's dialect (auto: detect it).")] = "auto",
    env: Annotated[list[str] | None, typer.Option(help="KEY=VALUE for its services; repeatable.")] = None,
    url: UrlOption = DEFAULT_URL,
    json_output: JsonOption = False,
) -> None:
    """Upload a project folder as a new version of DEPLOYMENT."""
    from inferd.platform.artifacts import pack

    with tempfile.TemporaryDirectory(prefix="inferd-push-") as scratch:
        archive = Path(scratch) / f"{folder.resolve().name}.tar.gz"
        with archive.open("wb") as out:
            pack(folder.resolve(), out)
        fields = [
            ("label", label),
            ("target", target),
            ("dialect", dialect),
            ("environment", json.dumps(_pairs(env, "--env"))),
        ]
        _show(
            _call(url, "POST", f"/deployments/{_quoted(deployment)}/versions", form=(fields, archive)),
            json_output,
        )


@app.command(cls=Command)
def versions(deployment: str, url: UrlOption = DEFAULT_URL, json_output: JsonOption = False) -> None:
    """List a deployment's versions."""
    found = _call(url, "GET", f"/deployments/{_quoted(deployment)}/versions")
    columns = ("id", "label", "digest", "size", "target", "dialect", "created_at")
    _show(found, json_output, columns, drop=("digest", "created_at", "size", "dialect"))


@app.command(cls=Command)
def start(
    deployment: str,
    version: Annotated[str, typer.Argument(help="The version's id.")],
    workers: Annotated[int, typer.Option(help="Worker processes of each replica's server.")] = 1,
    env: Annotated[list[str] | None, typer.Option(help="KEY=VALUE; repeatable.")] = None,
    engine: Annotated[
        str, typer.Option(help="local, or ray: Ray Serve replicas (--workers of them; INFERD_RAY_ADDRESS).")
    ] = "local",
    min_replicas: MinReplicas = 1,
    max_replicas: MaxReplicas = None,
    target_concurrency: TargetConcurrency = 1.0,
    url: UrlOption = DEFAULT_URL,
    json_output: JsonOption = False,
) -> None:
    """Start a service running VERSION of DEPLOYMENT, scaled between --min-replicas and
    --max-replicas by its requests in flight."""
    from inferd.cli.platform_ids import version_id

    body = {
        "version": version_id(url, deployment, version),
        "workers": workers,
        "environment": _pairs(env, "--env"),
        "engine": engine,
        **_scaling(min_replicas, max_replicas, target_concurrency),
    }
    _show(_call(url, "POST", f"/deployments/{_quoted(deployment)}/services", body), json_output)


@app.command(cls=Command)
def scale(
    service: str,
    min_replicas: MinReplicas = 1,
    max_replicas: MaxReplicas = None,
    target_concurrency: TargetConcurrency = 1.0,
    replicas: Annotated[int | None, typer.Option(help="Replicas to run now (default: as many).")] = None,
    url: UrlOption = DEFAULT_URL,
    json_output: JsonOption = False,
) -> None:
    """Change how SERVICE scales; its replicas are brought within the new bounds at once."""
    from inferd.cli.platform_ids import service_id

    body = {**_scaling(min_replicas, max_replicas, target_concurrency), "replicas": replicas}
    _show(_call(url, "PUT", f"/services/{_quoted(service_id(url, service))}/scaling", body), json_output)


def _scaling(low: int, high: int | None, target: float) -> dict[str, Any]:
    return {"min_replicas": low, "max_replicas": low if high is None else high, "target_concurrency": target}


@app.command(cls=Command)
def services(deployment: str, url: UrlOption = DEFAULT_URL, json_output: JsonOption = False) -> None:
    """List a deployment's services with their state and replicas (ready/wanted)."""
    found = _call(url, "GET", f"/deployments/{_quoted(deployment)}/services")
    if not json_output:
        found = [{**item, "replicas": f"{item['ready_replicas']}/{item['replicas']}"} for item in found]
    columns = ("id", "version_id", "state", "replicas", "port", "grpc_port", "restarts", "reason")
    _show(found, json_output, columns, drop=("grpc_port", "restarts", "port"))


@app.command(cls=Command)
def stop(service: str, url: UrlOption = DEFAULT_URL, json_output: JsonOption = False) -> None:
    """Stop a service once its in-flight requests are answered."""
    from inferd.cli.platform_ids import service_id

    _show(_call(url, "POST", f"/services/{_quoted(service_id(url, service))}/stop"), json_output)


@app.command("restart", cls=Command)
def restart(service: str, url: UrlOption = DEFAULT_URL, json_output: JsonOption = False) -> None:
    """Start a stopped or failed service again."""
    from inferd.cli.platform_ids import service_id

    _show(_call(url, "POST", f"/services/{_quoted(service_id(url, service))}/start"), json_output)


@app.command("delete-service", cls=Command)
def delete_service(service: str, url: UrlOption = DEFAULT_URL) -> None:
    """Stop and delete a service."""
    from inferd.cli.platform_ids import service_id

    _call(url, "DELETE", f"/services/{_quoted(service_id(url, service))}")


@app.command(cls=Command)
def logs(
    service: str,
    lines: Annotated[int, typer.Option(help="How many lines.")] = 100,
    url: UrlOption = DEFAULT_URL,
) -> None:
    """The last lines of a service's log."""
    from inferd.cli.platform_ids import service_id

    found = _call(url, "GET", f"/services/{_quoted(service_id(url, service))}/logs?lines={lines}")
    print("\n".join(found["lines"]))


@app.command(cls=Command)
def route(
    deployment: str,
    endpoint: Annotated[str, typer.Argument(help="The endpoint's name (its gateway path is /e/NAME/).")],
    weights: Annotated[list[str], typer.Argument(help="SERVICE=WEIGHT, weights summing to 100.")],
    shadow: Annotated[
        str | None, typer.Option(help="SERVICE[:PERCENT] mirrored, its answers dropped.")
    ] = None,
    url: UrlOption = DEFAULT_URL,
    json_output: JsonOption = False,
) -> None:
    """Create or switch an endpoint: requests split by weight over the services (canary, blue/green);
    prints its address on the gateway."""
    from inferd.cli.platform_ids import service_id

    routes = []
    for service, weight in _pairs(weights, "a weight").items():
        if not weight.isdigit():
            fail(f"the weight of {service} must be a whole number from 0 to 100, not '{weight}'")
        routes.append({"service": service_id(url, service, deployment), "weight": int(weight)})
    body: dict[str, Any] = {"routes": routes}
    if shadow:
        name, _, percent = shadow.partition(":")
        body["shadow"] = {"service": service_id(url, name, deployment), "percent": int(percent or 100)}
    found = _call(url, "PUT", f"/deployments/{_quoted(deployment)}/endpoints/{_quoted(endpoint)}", body)
    _show(found, json_output)
    if not json_output:
        print(f'endpoint "{found["name"]}": {_gateway_url(url)}/e/{_quoted(found["name"])}/')


@app.command(cls=Command)
def endpoints(deployment: str, url: UrlOption = DEFAULT_URL, json_output: JsonOption = False) -> None:
    """List a deployment's endpoints with their weights."""
    found = _call(url, "GET", f"/deployments/{_quoted(deployment)}/endpoints")
    columns = ("id", "name", "routes", "shadow_service_id", "shadow_percent")
    _show(found, json_output, columns, drop=("shadow_percent", "shadow_service_id"))


@app.command("export-k8s", cls=Command)
def export_k8s(
    deployment: str,
    output: Annotated[Path, typer.Option("--output", "-o", help="The folder the YAML files go to.")],
    gateway: Annotated[str, typer.Option(help="The Gateway the routes attach to.")] = "inferd",
    gateway_namespace: Annotated[
        str | None, typer.Option(help="Its namespace [default: the routes'].")
    ] = None,
    hostname: Annotated[
        list[str] | None, typer.Option(help="A host name the routes answer; repeatable.")
    ] = None,
    image: Annotated[
        str, typer.Option(help="Each version's image: {deployment}, {label}, {version}, {digest} filled in.")
    ] = "{deployment}:{label}",
    url: UrlOption = DEFAULT_URL,
) -> None:
    """Write DEPLOYMENT's endpoints as Gateway API HTTPRoutes (their weights as backendRefs) beside a
    Deployment and Service per service they route to, for `kubectl apply -f`."""
    from inferd.platform.workflows import Control, ControlError, WorkflowError
    from inferd.platform.workflows.kubernetes import Target, export

    target = Target(gateway, gateway_namespace, tuple(hostname or ()), image)
    try:
        with Control(url) as control:
            files = export(control, deployment, target)
    except (ControlError, WorkflowError, KeyError, IndexError, ValueError) as exc:
        fail(f"{deployment}: {exc}", code=1)
    output.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (output / name).write_text(text)
        print(output / name, flush=True)
