"""Ray Serve as the engine: the same inferd app on every replica, replicated and scaled by Ray.

Only Ray's public API is used: a deployment class wrapped by ``serve.ingress`` with a builder that
runs ``build_runtime`` and ``create_app`` inside each replica, so the models load in the replicas
(never in the driver) and nothing but the settings travels to them. V2 REST and the dialect's
routes are served by Ray's HTTP proxy; inferd's batching, if on, forms batches inside each replica.

Ray is an optional extra (``inferd[ray]``): it is imported only when this engine runs.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib.util
import logging
import os
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import inferd
from inferd.config.settings import Settings
from inferd.core.errors import EngineError, MissingExtra
from inferd.dialects.graph.spec import GraphSpec
from inferd.engines.forward import Forward, serving
from inferd.engines.local import Endpoints, OnReady
from inferd.engines.ray_nodes import (
    HandleGraphDialect,
    NodeReplica,
    deployment_name,
    graph_of,
    node_settings,
    replica_settings,
)
from inferd.engines.ray_ship import runtime_env, shipped_fields, shipping_error
from inferd.engines.sockets import free_ports
from inferd.server.app import build_runtime, create_app, models_lifespan

if TYPE_CHECKING:
    from ray.serve import Application
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger("inferd.engine")

DEPLOYMENT = "inferd"
#: The response header naming the replica that answered.
REPLICA_HEADER = b"x-inferd-replica"
#: Ray's proxy echoes the request id itself; the replica's copy would repeat the header.
REQUEST_ID_HEADER = b"x-request-id"
#: Variables of the local Ray inferd starts: no usage report leaves the machine, and on macOS and
#: Windows Ray stays a single loopback node.
LOCAL_RAY_ENVIRONMENT = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
HAPROXY_VARIABLE = "RAY_SERVE_ENABLE_HA_PROXY"
#: How long ``ray.init`` waits for the local Ray's GCS to bind its port, unless set. The GCS binds
#: in 2-4 s on an idle 2-core machine; on a busy one a GCS was seen never to bind (still running,
#: silent, 120 s on), so rather than wait longer the local Ray is started again once
#: (`LOCAL_START_ATTEMPTS`), the silent GCS ended first.
GCS_WAIT_VARIABLE, GCS_LOCAL_WAIT_S = "RAY_gcs_server_port_wait_time_s", "45"
LOCAL_START_ATTEMPTS = 2
#: What ``ray.init`` says when the GCS never wrote the file naming its port, and when the node's
#: raylet did not start in time (seen on a loaded machine): a start worth trying again.
GCS_SILENT = "gcs_server_port"
NODE_SLOW = "timed out during startup"
#: Where Ray's HAProxy keeps its files, by variable. Ray puts them in a folder per node, named by
#: the node's id (56 characters), and HAProxy refuses a socket path over 97 bytes: so the local Ray's
#: go to a short folder of its own in /tmp (where Ray's default, /tmp/haproxy-serve, is), removed
#: with it.
HAPROXY_FILE_VARIABLES = {
    "RAY_SERVE_HAPROXY_CONFIG_FILE_LOC": "haproxy.cfg",
    "RAY_SERVE_HAPROXY_SOCKET_PATH": "admin.sock",
    "RAY_SERVE_HAPROXY_SERVER_STATE_FILE": "server-state",
    "RAY_SERVE_HAPROXY_METRICS_SOCKET_PATH": "metrics.sock",
}
HAPROXY_FOLDER_PREFIX, HAPROXY_FOLDER_PARENT = "inferd-hap-", "/tmp"
#: How long a leaving replica keeps serving behind HAProxy, for it to be taken out of the backends.
#: Ray's default (30 s) is for load balancers across a cluster; the local Ray's HAProxy is on the same
#: node and told at once, and a replica still finishes its requests in flight: stopping takes seconds.
HAPROXY_DRAIN_VARIABLE, HAPROXY_LOCAL_DRAIN_S = "RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S", "5"
#: HAProxy's statistics page and Prometheus exporter, which it binds on all interfaces at fixed
#: ports (8404, 9101) unless told otherwise: a local Ray's get free ones, so a second one can start.
HAPROXY_PORT_VARIABLES = ("RAY_SERVE_HAPROXY_STATS_PORT", "RAY_SERVE_HAPROXY_METRICS_PORT")
#: Set per replica (its runtime_env): whether Ray runs the deployment's code on a thread of its own.
USER_CODE_THREAD_VARIABLE = "RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD"
RAY_MISSING = "the ray engine needs Ray Serve: pip install 'inferd[ray]'"


def _serve() -> Any:
    try:
        from ray import serve
    except ImportError:
        raise MissingExtra(RAY_MISSING, "ray") from None
    return serve


def deployment_options(settings: Settings) -> dict[str, Any]:
    """Ray Serve deployment options from inferd's settings: replicas or autoscaling, the per-replica
    concurrency limit, the CPUs each replica reserves, where the app runs in the replica (its main
    loop unless ``ray_user_code_thread``: Ray reads that variable as the replica starts), the graceful
    shutdown time, and Ray's own replica log (its access log only with ``access_log``: a line per
    request costs throughput)."""
    user_code_thread = {USER_CODE_THREAD_VARIABLE: "1" if settings.ray_user_code_thread else "0"}
    actor = {"num_cpus": settings.ray_num_cpus, "runtime_env": {"env_vars": user_code_thread}}
    options: dict[str, Any] = {
        "max_ongoing_requests": settings.ray_max_ongoing_requests,
        "ray_actor_options": actor,
        "graceful_shutdown_timeout_s": settings.graceful_timeout,
        "logging_config": {"log_level": settings.log_level.upper(), "enable_access_log": settings.access_log},
    }
    if settings.autoscale is None:
        options["num_replicas"] = settings.replicas
    else:
        low, high = settings.autoscale_range
        options["autoscaling_config"] = {
            "min_replicas": low,
            "initial_replicas": max(low, 1),
            "max_replicas": high,
            "target_ongoing_requests": settings.ray_target_ongoing_requests,
        }
    return options


class ReplicaApp:
    """The replica's app, naming the replica in every response (``x-inferd-replica``), leaving the
    request id header to Ray's proxy, which adds it, and telling a client's departure the ASGI way:
    Ray cancels the body's transfer, and the app receives ``http.disconnect``."""

    def __init__(self, app: ASGIApp, replica: str) -> None:
        from ray.exceptions import TaskCancelledError

        self.app = app
        self.replica = replica.encode()
        self.cancelled = TaskCancelledError

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def receive_or_disconnect() -> Message:
            try:
                return await receive()
            except self.cancelled:
                return {"type": "http.disconnect"}

        async def send_named(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [item for item in message.get("headers", ()) if item[0] != REQUEST_ID_HEADER]
                message["headers"] = [*headers, (REPLICA_HEADER, self.replica)]
            await send(message)

        await self.app(scope, receive_or_disconnect, send_named)


def _app_builder(fields: dict[str, Any], workdir: str | None, graph: bool) -> Callable[[], ASGIApp]:
    """What ``serve.ingress`` runs in each replica: inferd's app, its models loaded on startup (a
    graph's with its nodes behind their deployments' handles); ``workdir`` as for `replica_settings`."""

    def build() -> ASGIApp:
        settings = replica_settings(fields, workdir)
        runtime = build_runtime(settings, HandleGraphDialect() if graph else None)
        replica = _serve().get_replica_context().replica_id.unique_id
        return ReplicaApp(create_app(runtime, models_lifespan(runtime)), replica)

    return build


def application(settings: Settings, workdir: str | None = None, shipped: bool = False) -> Application:
    """The inferd app as a Ray Serve application: one deployment, ``deployment_options`` applied;
    for an inference graph, that ingress plus a deployment per node whose code inferd loads, bound
    to the ingress so Serve deploys them with it. ``workdir``: where the replicas work; ``shipped``
    when it went to the cluster as the job's working_dir (`inferd.engines.ray_ship`): the replicas
    then stay in their copy, the target relative to it."""
    serve = _serve()
    graph = graph_of(settings, workdir)
    fields = settings.model_dump()
    if shipped and workdir is not None:
        fields, workdir = shipped_fields(fields, workdir), None

    class InferdReplica:
        """One copy of the inferd server; its ASGI app is built by ``serve.ingress`` on start. A
        graph's node deployments are its arguments (their handles, which the graph's nodes get by
        name with ``serve.get_deployment_handle``, as the app is built apart from this object)."""

        def __init__(self, *nodes: Any) -> None:
            self.nodes = nodes

    ingress = serve.ingress(_app_builder(fields, workdir, graph is not None))(InferdReplica)
    deployment = serve.deployment(ingress, name=DEPLOYMENT, **deployment_options(settings))
    nodes = [] if graph is None else _node_deployments(graph, settings, fields, workdir)
    bound: Application = deployment.bind(*nodes)
    return bound


def _node_deployments(
    graph: GraphSpec, settings: Settings, fields: dict[str, Any], workdir: str | None
) -> list[Application]:
    """A deployment per node whose code inferd loads, each with the node's own scale settings; its
    replicas get ``fields`` (the settings as the replicas see them)."""
    serve = _serve()
    return [
        serve.deployment(
            NodeReplica,
            name=deployment_name(node.name),
            **deployment_options(node_settings(settings, node.scale)),
        ).bind(fields, node.name, workdir)
        for node in graph.root.walk()
        if node.runs_code
    ]


def app_builder(args: dict[str, Any]) -> Application:
    """Ray Serve's application builder for config files and KubeRay (``import_path:
    inferd.engines.ray:app_builder``): ``args`` are inferd settings by field name, and ``workdir``
    the folder the replicas work in."""
    fields = dict(args)
    workdir = fields.pop("workdir", None)
    return application(Settings(**fields), workdir)


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in os.environ while a local Ray starts (its processes inherit them), then restored."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _local_environment() -> dict[str, str]:
    """The local Ray's variables; PYTHONPATH leads its workers to the inferd this process runs."""
    here = str(Path(inferd.__file__).resolve().parent.parent)
    paths = [here, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {
        **LOCAL_RAY_ENVIRONMENT,
        "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
        GCS_WAIT_VARIABLE: os.environ.get(GCS_WAIT_VARIABLE, GCS_LOCAL_WAIT_S),
    }


def _haproxy_environment(folder: str) -> dict[str, str]:
    """Ray's HAProxy mode for the local Ray, its files in ``folder``, its side listeners on free ports,
    and a drain of a leaving replica as short as one node allows (unless set in the environment)."""
    values = {
        HAPROXY_VARIABLE: "1",
        "RAY_SERVE_HAPROXY_SERVER_STATE_BASE": folder,
        HAPROXY_DRAIN_VARIABLE: os.environ.get(HAPROXY_DRAIN_VARIABLE, HAPROXY_LOCAL_DRAIN_S),
    }
    values.update({name: os.path.join(folder, file) for name, file in HAPROXY_FILE_VARIABLES.items()})
    ports = free_ports("0.0.0.0", len(HAPROXY_PORT_VARIABLES))
    values.update(zip(HAPROXY_PORT_VARIABLES, map(str, ports), strict=True))
    return values


@contextlib.contextmanager
def ray_cluster(settings: Settings, workdir: str | None = None) -> Iterator[bool]:
    """Connected to ``ray_address``, or to a local Ray of our own (``address="local"``: never a
    stray cluster found on the machine) with its own temporary directory, on loopback, without
    dashboard; yields whether the cluster is our own. Disconnects (and stops our own) on exit.
    On a cluster, ``workdir`` (if given) ships as the job's working_dir (`inferd.engines.ray_ship`):
    its nodes need not see this machine's folders. Our own Ray shares this machine's."""
    if settings.ray_address:
        import ray

        if settings.ray_haproxy:
            logger.warning(
                "--ray-haproxy applies to a local Ray: start the cluster with %s=1", HAPROXY_VARIABLE
            )
        env = None if workdir is None else runtime_env(workdir)
        address = settings.ray_address
        _connect(lambda: ray.init(address=address, runtime_env=env, logging_level=logging.WARNING), workdir)
        try:
            yield False
        finally:
            ray.shutdown()
        return
    with contextlib.ExitStack() as folders:
        environment = _local_environment()
        if settings.ray_haproxy:
            folder = folders.enter_context(_temporary_folder(HAPROXY_FOLDER_PREFIX, HAPROXY_FOLDER_PARENT))
            environment.update(_haproxy_environment(folder))
        with _environment(environment):
            import ray  # after the variables: Ray reads some of them on import

            for attempt in range(1, LOCAL_START_ATTEMPTS + 1):
                temp_dir = folders.enter_context(_temporary_folder("inferd-ray-"))
                try:
                    _connect(
                        functools.partial(
                            ray.init,
                            address="local",
                            include_dashboard=False,
                            _node_ip_address="127.0.0.1",
                            _temp_dir=temp_dir,
                            logging_level=logging.WARNING,
                        )
                    )
                    break
                except EngineError as exc:
                    _end_processes_under(temp_dir)
                    if GCS_SILENT not in str(exc) and NODE_SLOW not in str(exc):
                        raise
                    if attempt == LOCAL_START_ATTEMPTS:
                        raise EngineError(f"{exc}{_gcs_log_tail(temp_dir)}") from None
                    logger.warning("the local Ray did not start (%s); starting Ray again", exc)
        try:
            yield True
        finally:
            ray.shutdown()


def _temporary_folder(prefix: str, parent: str | None = None) -> tempfile.TemporaryDirectory[str]:
    """A folder removed on exit, whatever Ray's processes, which may outlive ``ray.shutdown``, leave in it."""
    return tempfile.TemporaryDirectory(prefix=prefix, dir=parent, ignore_cleanup_errors=True)


def _end_processes_under(folder: str) -> None:
    """End what a failed ``ray.init`` left running with ``folder`` on its command line (its GCS):
    Ray forgets the processes of a node it failed to start, and they would outlive this one. They
    are this process's children, so their `subprocess.Popen` objects are found and waited for."""
    for process in [found for found in gc.get_objects() if isinstance(found, subprocess.Popen)]:
        if process.returncode is None and folder in str(process.args):
            process.kill()
            process.wait(10)


def _gcs_log_tail(folder: str, lines: int = 20) -> str:
    """The end of the GCS's own logs under ``folder``, for the error that says it did not start."""
    tails = []
    for log in sorted(Path(folder).glob("session_*/logs/gcs_server.*")):
        text = log.read_text(errors="replace").strip()
        if text:
            tails.append(f"\n{log.name}:\n" + "\n".join(text.splitlines()[-lines:]))
    return "".join(tails) or " (the GCS wrote no log)"


def _connect(init: Callable[[], object], workdir: str | None = None) -> None:
    """``init``, its failure an EngineError: a ``workdir`` too large to ship says so. Ray raises a
    bare ``Exception`` when a local node does not start in time, so any exception counts."""
    try:
        init()
    except Exception as exc:
        too_large = None if workdir is None else shipping_error(exc, workdir)
        raise (too_large or EngineError(f"cannot start or reach Ray: {exc}")) from None


def _http_port(settings: Settings) -> int:
    """The proxy's port; 0 asks for a free one, which Ray cannot report back, so it is chosen here."""
    return settings.port or free_ports(settings.host)[0]


def run(settings: Settings, on_ready: OnReady, models: tuple[str, ...]) -> int:
    """Deploy the app on Ray Serve as the application ``ray_app_name`` at ``ray_route_prefix``,
    announce it, and keep it until SIGTERM or Ctrl+C; then delete that application alone (and stop
    the local Ray). At the prefix ``/`` the proxy listens on the server's port; at another, on
    ``ray_proxy_port``, and the server's port forwards to the application (`inferd.engines.forward`).
    On a cluster the working directory ships to the nodes (`inferd.engines.ray_ship`); our own Ray
    uses it in place. ``models`` are the names the ready line reports."""
    if importlib.util.find_spec("ray") is None:
        raise MissingExtra(RAY_MISSING, "ray")
    port = _http_port(settings)
    prefixed = settings.ray_route_prefix != "/"
    proxy_port = settings.ray_proxy_port if prefixed else port
    workdir = os.getcwd()
    with ray_cluster(settings, workdir) as own:
        from ray import serve
        from ray.serve.exceptions import RayServeException

        stop = _stop_event()  # after ray.init, which installs a SIGTERM handler of its own
        serve.start(http_options={"host": settings.host, "port": proxy_port})
        app = application(settings, workdir, shipped=not own)
        try:
            try:
                serve.run(app, name=settings.ray_app_name, route_prefix=settings.ray_route_prefix)
            except (RuntimeError, RayServeException) as exc:
                raise EngineError(f"the Ray Serve deployment failed: {exc}") from None
            with forwarded(settings, port, proxy_port) if prefixed else contextlib.nullcontext():
                on_ready(Endpoints(settings.host, port, None, models))
                stop.wait()
                logger.info("stopping the Ray Serve application %s", settings.ray_app_name)
        finally:
            if own:
                serve.shutdown()  # the application with it
            else:
                serve.delete(settings.ray_app_name)  # the cluster's other applications stay
    logger.info("server stopped")
    return 0


@contextlib.contextmanager
def forwarded(settings: Settings, port: int, proxy_port: int) -> Iterator[None]:
    """The server's ``port`` forwarded to its application at the proxy on ``proxy_port`` (on a
    thread of its own), once the proxy is seen to route the prefix to it: a cluster whose proxy is
    elsewhere, or that routes the prefix to another application, is an EngineError saying so."""
    proxy = f"http://127.0.0.1:{proxy_port}"
    _check_route(proxy, settings.ray_route_prefix, settings.ray_app_name)
    forward = Forward(
        f"127.0.0.1:{proxy_port}", settings.ray_route_prefix, settings.ray_app_name, settings.max_body_size
    )
    with serving(forward, settings, port):
        yield


def _check_route(proxy: str, prefix: str, name: str) -> None:
    """That Ray Serve's proxy at ``proxy`` routes ``prefix`` to the application ``name``, by its
    ``/-/routes`` table (route prefix → application)."""
    import httpx

    try:
        routes = httpx.get(f"{proxy}/-/routes", timeout=10).json()
    except (httpx.HTTPError, ValueError) as exc:
        raise EngineError(
            f"the cluster's Ray Serve proxy does not answer at {proxy} ({type(exc).__name__}): "
            "ray_proxy_port must name the port it listens on"
        ) from None
    if routes.get(prefix) != name:
        raise EngineError(
            f"the Ray Serve proxy at {proxy} routes {prefix} to {routes.get(prefix)!r}, not to the "
            f"application {name!r}: ray_proxy_port must name this cluster's proxy"
        )


def _stop_event() -> threading.Event:
    """Set by the first SIGTERM or Ctrl+C."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    return stop
