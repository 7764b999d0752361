"""The server's settings and what every dialect reads, declared once. Every field reads
``INFERD_<FIELD>`` from the environment.

Settings that belong to one dialect live with it (``inferd/dialects/<name>/settings.py``, a subclass
of `DialectSettings`); `inferd.config.settings.Settings`, a layer above, is the server's and every
dialect's in one object, what ``serve`` reads. The docstring under each field is its documentation
(its description once `inferd.core.settings_docs.describe` read it), so the settings reference and
``serve``'s options are generated from them and cannot drift.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from inferd.core.names import name_problem

ORIGIN = re.compile(r"\*|https?://[^/?#\s]+/?", re.IGNORECASE)
Engine = Literal["local", "ray"]
PayloadLogMode = Literal["all", "request", "response"]
Dialect = Literal["auto", "native", "seldon", "deepaas", "cortex", "abeja", "graph", "runtimes", "repository"]
#: Largest image (width x height) decoded for a handler by default: 4096 x 4096 (see ``max_image_pixels``).
DEFAULT_MAX_IMAGE_PIXELS = 4096 * 4096
#: gRPC's largest message (its lengths are signed 32-bit): what is sent when no limit is set.
GRPC_LARGEST_MESSAGE = 2**31 - 1


class ModelSettings(BaseModel):
    """Settings of one model, overriding the server-wide defaults of the same names."""

    model_config = ConfigDict(extra="forbid")

    max_batch_size: int | None = Field(None, ge=1)
    """The most rows one call of this model takes (1 turns batching off for it)."""

    max_batch_time_ms: float | None = Field(None, gt=0)
    """How long the first request of this model's batch waits for others to join."""

    max_queue_size: int | None = Field(None, ge=1)
    """Requests that may wait for this model's batch; more are shed with 503 and Retry-After."""

    max_concurrency: int | None = Field(None, ge=1)
    """Requests of this model answered at once in each worker; more wait in a bounded queue."""

    payload_log: bool | None = None
    """Payload logging of this model: ``false`` turns it off while ``payload_log_url`` is set (``true``
    is the default then)."""

    payload_log_mode: PayloadLogMode | None = None
    """What of this model's calls is logged: ``all``, ``request`` or ``response``."""


class DialectSettings(BaseModel):
    """What every dialect may read: what is served under which name and version, how user code runs,
    and the limits of what it is given. A dialect with settings of its own subclasses this beside its
    code (``inferd/dialects/<name>/settings.py``); the server gives each dialect its own class's
    fields alone (`view`), so no dialect reads, or comes to depend on, the server's settings."""

    # Validators are built on first use: every dialect's subclass is declared at import (Settings
    # gathers them all), but only the served dialect's is ever validated (`view`).
    model_config = ConfigDict(extra="ignore", defer_build=True)

    target: str = ""
    """What to serve: ``path/model.py:Class``, a module, a config file or a directory."""

    name: str | None = None
    """Name the model is served under; defaults to one derived from the target. It must fit a URL
    path: letters, digits, ``_``, ``.`` and ``-``, starting with a letter or digit (names from
    config files and derived names follow the same rule)."""

    model_version: str | None = None
    """Version label of the served model, reported in V2 metadata and responses."""

    predict_in_thread: bool | Literal["auto"] = False
    """Run synchronous user code (``predict`` and the like) in a thread pool instead of on the event
    loop.

    Sub-millisecond models are fastest on the loop; turn this on for slow models so health checks
    and other requests keep being answered while one runs. ``auto`` starts in threads and moves code
    to the loop while its calls stay under a millisecond (ABEJA handlers always use ``auto`` unless
    this is ``true``)."""

    sequence_idle_timeout: float = Field(60.0, gt=0)
    """Seconds a sequence of a stateful model (``inferd.SequenceModel``) may go without a request
    before its state is dropped; a later request of it without ``sequence_start`` gets 400."""

    max_sequences: int = Field(1024, ge=1)
    """Most sequences of one stateful model alive at once; a ``sequence_start`` past it gets 503."""

    install_requirements: bool = False
    """Install the served project's ``requirements.txt`` with pip before loading it (Cortex projects).

    Off by default: serving a directory should not change the Python environment unless asked."""

    max_upload_files: int = Field(100, ge=1)
    """Most files one multipart request may carry (DEEPaaS, ABEJA and Seldon forms); more get 413."""

    max_upload_size: int = Field(64 * 1024 * 1024, ge=1)
    """Largest file, in bytes, of a multipart request; a larger one gets 413."""

    max_image_pixels: int = Field(DEFAULT_MAX_IMAGE_PIXELS, ge=1)
    """Largest image (width x height) decoded for a handler; larger ones (and video frames) are
    refused with 400 before their pixels are decoded, which stops decompression bombs.

    The default, 4096 x 4096 = 16,777,216 pixels, is more than any vision model takes as input
    while a decoded image of that size is at most 48 MiB of RGB (Pillow's own limit, 89,478,485, lets
    a 200 KB PNG of 8000 x 8000 cost about 850 MB). Raise it for models that really read larger
    images."""

    data_dir: Path = Path(".inferd")
    """Where inferd keeps state, such as the SQLite file of training jobs."""

    model_cache_dir: Path | None = None
    """Where models named by a storage URI (``s3://``, ``gs://``, ``https://``: a served target, a
    Cortex API's ``model``) are kept once downloaded; every worker and every server given the same
    folder shares them, so a model is downloaded once. Unset: ``model-cache`` in ``data_dir``."""

    model_cache_size: int = Field(10 * 1024, ge=1)
    """Most MiB the model cache keeps; past it the models fetched least recently are removed."""

    max_batch_size: int = Field(1, ge=1)
    """Adaptive batching: the most rows one model call takes; concurrent requests are concatenated on
    axis 0 up to it. 1 turns batching off (native and V2 models)."""

    max_batch_time_ms: float = Field(1.0, gt=0)
    """Adaptive batching: how long the first request of a batch waits for others to join."""

    max_queue_size: int = Field(1024, ge=1)
    """Requests of one model that may wait for a batch (adaptive batching) or for a turn
    (``max_concurrency``); more are shed with 503 and Retry-After."""

    models: dict[str, ModelSettings] = Field(default_factory=dict)
    """Per-model settings by model name, e.g. ``INFERD_MODELS__IRIS__MAX_BATCH_SIZE=32``; they win
    over the model settings file."""

    model_settings: Path | None = None
    """A YAML or JSON file mapping model names to their settings (`max_batch_size`,
    `max_batch_time_ms`, `max_queue_size`, `max_concurrency`)."""

    @field_validator("name")
    @classmethod
    def _usable_name(cls, value: str | None) -> str | None:
        """An empty name would silently fall back to the derived one; a name with ``/`` or ``..``
        would be served where no request reaches it: both are refused at start-up."""
        problem = None if value is None else name_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @property
    def model_cache(self) -> Path:
        """The model cache's folder: ``model_cache_dir``, else ``model-cache`` in ``data_dir``."""
        return self.model_cache_dir or Path(self.data_dir) / "model-cache"


class ServerSettings(DialectSettings, BaseSettings):
    """The server's settings: what it serves, ports, logging, limits, access, workers, batching, and
    the scale-out (``replicas``, ``autoscale``, ``ray_*``: what the Ray engine runs and what
    ``export`` writes into manifests alike, so they live here, below both)."""

    # Field patterns run on Python's re: pydantic-core's own regex engine kept about 1 MiB per worker
    # for the three patterns below (issue 26 memory), for strings read once at start.
    model_config = SettingsConfigDict(
        env_prefix="INFERD_",
        env_nested_delimiter="__",
        extra="ignore",
        defer_build=True,
        regex_engine="python-re",
    )

    dialect: Dialect = "auto"
    """Handler convention of the target; ``auto`` detects it from the target."""

    host: str = "127.0.0.1"
    """Interface the HTTP and gRPC servers bind to."""

    port: int = Field(8080, ge=0, le=65535)
    """HTTP port; 0 picks a free one (the ready line shows it)."""

    grpc_port: int = Field(8081, ge=0, le=65535)
    """gRPC port; 0 picks a free one (the ready line shows it)."""

    metrics_port: int | None = Field(None, ge=0, le=65535)
    """A port of its own for the Prometheus endpoint, besides ``/metrics`` on the HTTP port; unset
    serves it on the HTTP port only. With the seldon dialect it is Seldon's metrics server: the
    Seldon series alone at ``PREDICTIVE_UNIT_METRICS_ENDPOINT`` (``/metrics`` unset)."""

    grpc_enabled: bool = True
    """Serve the V2 gRPC protocol next to HTTP."""

    grpc_server: Literal["inferd", "grpcio"] = "inferd"
    """Which server answers gRPC: inferd's own over its HTTP/2 framing, or grpcio's grpc.aio.

    Both serve the same services, interceptors (tokens, spans), limits and graceful stop; ``inferd``
    skips grpc.aio's per-call machinery, about 2x the calls per second on one core
    (bench/grpc_load.py). ``grpcio`` is there for what only grpc.aio has (compressed messages)."""

    http: Literal["uvicorn", "granian"] = "uvicorn"
    """HTTP server core: uvicorn (httptools), or granian (Rust, ``pip install inferd[granian]``).

    Both serve the same app and V2 infer fast path, share one port across workers and drain on
    SIGTERM. granian applies ``header_timeout`` and ``max_header_size`` by dropping the connection
    (no 408 or 431), counts ``max_connections`` as requests in flight, and ignores
    ``keep_alive_timeout``, ``body_timeout`` and ``min_body_rate`` (it has no body read
    timeout); see docs/workers.md for the measured difference."""

    workers: int = Field(1, ge=1)
    """Number of server processes sharing the HTTP and gRPC ports; each loads the models once."""

    access_log: bool = False
    """Log one JSON line per HTTP request."""

    tracing: bool = False
    """Send OpenTelemetry traces of every call over OTLP, configured by the standard OTEL variables.

    Seldon's ``--tracing`` is this option. ``OTEL_TRACES_EXPORTER`` (not ``none``) or
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` set turns tracing on too, ``OTEL_SDK_DISABLED=true`` keeps
    it off. See docs/observability.md for the variables and spans."""

    log_level: Literal["debug", "info", "warning", "error"] = "info"
    """Minimum level of the JSON log lines written to stderr."""

    log_format: Literal["auto", "inferd", "abeja"] = "auto"
    """Fields of the log lines: inferd's, or ABEJA's (`timestamp`, `log_level`, platform ids);
    ``auto`` picks ABEJA's for the ABEJA dialect."""

    max_body_size: int = Field(64 * 1024 * 1024, ge=1)
    """Largest accepted request body in bytes; larger bodies get 413. A compressed body
    (``Content-Encoding: gzip`` or ``deflate``, on the V2 routes) is held to it once inflated too,
    checked while it inflates. It bounds received gRPC messages too, unless ``grpc_max_message_size``
    is set."""

    max_header_size: int = Field(64 * 1024, ge=1)
    """Largest request head (request line and headers) in bytes; a larger one gets 431 and the
    connection is closed. It is counted as the bytes arrive, so an oversized head costs at most
    this much memory. (This and the next five: HTTP of the ``local`` engine, the metrics port
    included; on Ray its proxy holds the connections.)"""

    header_timeout: float = Field(30.0, gt=0)
    """Seconds a client has to send a request's head (request line and headers), counted from the
    connection's opening, or on a kept-alive connection from the next request's first byte; a client
    that sent part of a head gets 408, one that sent nothing is disconnected. Frees the connections
    of stalled and slow ("slowloris") clients."""

    body_timeout: float = Field(30.0, gt=0)
    """Seconds a client may go without sending any of a request's body once its head is whole (nginx's
    ``client_body_timeout``: between two reads, not for the whole body); it then gets 408 and the
    connection is closed. Time the server itself holds the body back (the app has not asked for more
    yet, a pipelined request waits its turn, ``Expect: 100-continue`` not yet answered) is not
    counted."""

    min_body_rate: int = Field(240, ge=0)
    """Bytes a second a request's body must average once it has been arriving for ``body_timeout``
    seconds (Kestrel's minimum request body data rate); a slower one gets 408 and the connection is
    closed, so a byte sent just within every ``body_timeout`` cannot hold a connection for days. 0:
    no minimum. Time the server holds the body back is not counted."""

    keep_alive_timeout: int = Field(30, ge=1)
    """Whole seconds an HTTP connection may stay idle after an answer before the server closes it. A
    reverse proxy or load balancer reusing connections to inferd should give up on idle ones sooner
    (nginx ``keepalive_timeout`` in its ``upstream`` block)."""

    max_connections: int = Field(1000, ge=1)
    """Open HTTP connections each server process (worker) keeps. A connection opened past the limit
    closes the one idle the longest (it sent nothing yet, or waits between requests); when none is
    idle, the one receiving a request (head or body not yet whole, nothing answered) that sent nothing
    for the longest; when every one is being answered, its request gets 503 with ``Retry-After`` and
    it is closed. Each process raises
    its soft open files limit to the hard one at start-up, and lowers this, with a warning, when that
    limit cannot hold so many connections besides the server's own files."""

    auth_tokens: Annotated[list[SecretStr], NoDecode] = Field(default_factory=list)
    """Bearer tokens a client must send (``Authorization: Bearer <token>``) on every HTTP route and gRPC
    method but health and readiness; empty serves without authentication. ``--auth-token`` (repeatable)
    or ``INFERD_AUTH_TOKENS``, comma-separated or a JSON list. Several tokens let one be rotated out
    while clients move to another. Missing or unknown tokens get 401 (gRPC UNAUTHENTICATED); the
    ``Authorization`` header is then removed before any model code sees the request."""

    allowed_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Origins (``scheme://host[:port]``, or ``*`` for any) besides the server's own whose pages may
    call control routes: V2 model load and unload, DEEPaaS training jobs, the try-it login. A request
    to one of them with an ``Origin`` header naming another site gets 403: a browser sends a
    cross-site POST of a form or ``text/plain`` without asking first. Requests without ``Origin``
    (curl, SDKs) and inference routes are not concerned. ``--allowed-origin`` (repeatable), or
    ``INFERD_ALLOWED_ORIGINS`` comma-separated or a JSON list."""

    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Host names (``Host`` header, without port; ``*`` for any, ``.example.com`` for it and its
    subdomains) the server answers besides the loopback ones (``localhost``, ``127.x.x.x``, ``::1``).
    A server bound to a loopback address answers only those and loopback names; one bound elsewhere
    checks ``Host`` only when this is set. Other names get 403 on every HTTP route, which stops DNS
    rebinding (a page on an attacker's name resolving to 127.0.0.1). ``--allowed-host``
    (repeatable), or ``INFERD_ALLOWED_HOSTS`` comma-separated or a JSON list."""

    max_concurrency: int | None = Field(None, ge=1)
    """Requests one model runs at once in each worker process; up to ``max_queue_size`` more wait for a
    turn, and beyond that they are shed with 503 and ``Retry-After``. Unset: no limit. With adaptive
    batching it counts requests, not batches, so keep it at least ``max_batch_size``."""

    request_timeout: float | None = Field(None, gt=0)
    """Seconds a request may wait for and run its model before it is answered 504; unset: no limit.

    Setting it turns on ``predict_in_thread``: synchronous model code on the event loop cannot be
    interrupted. Code in a thread keeps running to its end after the timeout (a thread cannot be
    stopped) and its answer is dropped; async model code is cancelled. The worker keeps serving."""

    grpc_max_message_size: int | None = Field(None, ge=1)
    """Largest gRPC message received and sent, in bytes; a larger request gets RESOURCE_EXHAUSTED,
    refused from its length before it is read. Unset, received messages are held to
    ``max_body_size`` like HTTP bodies, and sent ones to gRPC's largest (2 GiB)."""

    grpc_flood_limit: int = Field(1000, ge=1)
    """HTTP/2 frames that cost work and carry no request (PING, SETTINGS, RST_STREAM, PRIORITY, empty
    DATA and HEADERS, streams opened past the limit) one gRPC connection may send per second, as
    many at once; past it the connection ends with GOAWAY ENHANCE_YOUR_CALM. Bounds the ping,
    settings and reset floods ("rapid reset", CVE-2023-44487) on inferd's own gRPC server and on the
    platform's gRPC gateway; a gRPC client sends a few such frames a minute."""

    graceful_timeout: float = Field(30.0, ge=0)
    """Seconds to let in-flight requests finish after SIGTERM or Ctrl+C."""

    isolate: bool = False
    """Run the models (user code) of each worker in a child "model process" behind the worker's HTTP
    server. When user code segfaults, exits, outgrows ``worker_memory_limit`` or hangs past
    ``hang_timeout``, its in-flight HTTP requests get 503 with ``Retry-After`` instead of a reset
    connection, and the model process is replaced (models loaded again). The cost: every HTTP
    request crosses one more process boundary (its body and answer are copied once more), and gRPC
    is served by the model process, so a crash ends its in-flight calls with UNAVAILABLE."""

    hang_timeout: float = Field(120.0, gt=0)
    """With ``isolate``: seconds an HTTP request may wait for the model process; past them the model
    process is considered hung, killed and replaced, and its in-flight requests get 503."""

    restart_wait: float = Field(60.0, ge=0)
    """With ``isolate``: seconds a request waits for a model process being replaced (loading its
    models) before it gets 503."""

    worker_memory_limit: int | None = Field(None, ge=1)
    """Resident memory in MiB a process running user code may use (the model process with
    ``isolate``, else each worker of ``--workers`` > 1), checked every ``memory_check_interval``
    seconds; past it the process is killed and replaced. Unset: no limit."""

    memory_check_interval: float = Field(1.0, gt=0)
    """Seconds between two checks of ``worker_memory_limit``."""

    payload_log_url: str | None = Field(None, pattern=r"^https?://")
    """Payload logging: the HTTP sink every inference request and response is sent to as a CloudEvent,
    in the format KServe's logger sends (``ce-*`` headers, the payload as the body), so consumers of
    KServe's logs read inferd's. Unset: off.

    Events leave from a bounded queue in the background: a slow or dead sink never slows or fails a
    request; what does not fit is dropped and counted (``inferd_payload_log_dropped_total``). V2 REST
    and gRPC inference are logged (see docs/observability.md). Per model: ``payload_log`` and
    ``payload_log_mode`` in ``models`` or the model settings file."""

    payload_log_mode: PayloadLogMode = "all"
    """Payload logging: ``all`` sends the request and the response (two events sharing ``ce-id``),
    ``request`` or ``response`` only that one."""

    payload_log_sample: float = Field(1.0, ge=0, le=1)
    """Payload logging: the share of calls logged, drawn per call (a call's request and response are
    both logged or neither); 0 logs nothing."""

    payload_log_queue: int = Field(1000, ge=1)
    """Payload logging: events each worker process holds for the sink; more are dropped (and counted)."""

    payload_log_namespace: str = "default"
    """Payload logging: the ``ce-namespace`` of the events (KServe's InferenceService namespace)."""

    payload_log_timeout: float = Field(2.0, gt=0)
    """Payload logging: seconds connecting to the sink, or the sink's silence while it owes answers,
    may last before the events concerned count as failed; on shutdown, the most the events still
    held are waited for."""

    engine: Engine = "local"
    """What runs the server: ``local`` (this machine: one process, or ``workers`` of them) or ``ray``
    (Ray Serve replicas on a local Ray started for the purpose or on the cluster at ``ray_address``)."""

    replicas: int = Field(1, ge=1)
    """Copies of the server behind one address when scaled out: Ray Serve replicas, Kubernetes pods.
    Ignored when ``autoscale`` is set."""

    autoscale: str | None = Field(None, pattern=r"^\d+:\d+$")
    """``MIN:MAX`` replicas, scaled by load: Ray Serve's autoscaler on the ongoing requests per
    replica, a HorizontalPodAutoscaler on CPU in Kubernetes. Replaces ``replicas``."""

    ray_address: str | None = None
    """The Ray cluster to deploy to (``ray://host:10001`` or ``host:6379``); unset starts a local Ray
    for the server's lifetime, which joins no other cluster."""

    ray_app_name: str = Field("inferd", min_length=1)
    """Ray Serve's name for the server's application. Servers sharing a cluster (``ray_address``) each
    need a name of their own: each deploys, replaces and deletes its own application alone."""

    ray_route_prefix: str = Field("/", pattern=r"^(/|(/[^/?#{}]+)+)$")
    """Where the application answers on Ray Serve's proxy. ``/`` (the default) takes the whole proxy,
    which then listens on the server's ``port``. Servers sharing a cluster each take a prefix of their
    own (``/NAME``): the cluster's proxy then listens on ``ray_proxy_port`` and the server's ``port``
    forwards to its application there, so its clients see the same paths either way."""

    ray_proxy_port: int = Field(8000, ge=1, le=65535)
    """With a ``ray_route_prefix`` other than ``/``: the port of the cluster's Serve proxy on this
    machine (Ray's default, 8000). The first server to deploy starts it there; every server sharing
    the cluster must name the same port."""

    ray_haproxy: bool = False
    """Ray Serve's HAProxy ingress (Ray 2.55 or later) instead of its Python proxy, for the local Ray
    inferd starts and in exported RayService manifests. It is Ray's ``RAY_SERVE_ENABLE_HA_PROXY=1``."""

    ray_num_cpus: float = Field(1.0, gt=0)
    """CPUs each Ray replica reserves; fractions let several replicas share a core (0.5 fits two
    replicas per core)."""

    ray_max_ongoing_requests: int = Field(256, ge=1)
    """Requests one Ray replica takes at once (Ray's own default, 5, starves an async server); more
    wait in Ray's proxy. inferd's batching, if on, still forms batches inside each replica."""

    ray_target_ongoing_requests: float = Field(64.0, gt=0)
    """With ``autoscale`` on Ray: the ongoing requests per replica the autoscaler aims for."""

    ray_user_code_thread: bool = False
    """Run inferd's app in each Ray replica on a thread of its own, as Ray Serve does by default. It is
    Ray's ``RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD``. Off, the app runs on the replica's own event
    loop: a thread hop fewer for the request and each of its messages, as in Ray Serve's own
    throughput-optimized mode. inferd keeps slow model code off that loop with
    ``predict_in_thread``, which a model whose calls take seconds should set."""

    @field_validator("auth_tokens", "allowed_origins", "allowed_hosts", mode="before")
    @classmethod
    def _split_list(cls, value: Any) -> Any:
        """A list from the environment as a JSON list or comma-separated; empty entries are dropped."""
        if isinstance(value, str):
            text = value.strip()
            value = json.loads(text) if text.startswith("[") else text.split(",")
        if isinstance(value, (list, tuple)):
            stripped = [token.strip() if isinstance(token, str) else token for token in value]
            return [token for token in stripped if token != ""]
        return value

    @field_validator("allowed_origins")
    @classmethod
    def _origins(cls, value: list[str]) -> list[str]:
        """An origin is ``scheme://host[:port]``; a bare host name would never match, so it is refused."""
        for origin in value:
            if not ORIGIN.fullmatch(origin):
                raise ValueError(f"origin {origin!r} is not '*' or http(s)://host[:port]")
        return [origin.rstrip("/") for origin in value]

    @model_validator(mode="after")
    def _timeout_needs_threads(self) -> ServerSettings:
        """A request timeout cannot interrupt synchronous code on the event loop: run it in threads."""
        if self.request_timeout is not None:
            self.predict_in_thread = True
        return self

    @model_validator(mode="after")
    def _autoscale_range(self) -> ServerSettings:
        if self.autoscale is not None:
            low, high = self.autoscale_range
            if high < 1 or low > high:
                raise ValueError(f"autoscale {self.autoscale!r}: MIN:MAX needs MAX >= 1 and MIN <= MAX")
        return self

    @property
    def grpc_limits(self) -> tuple[int, int]:
        """The largest gRPC message (received, sent): ``grpc_max_message_size``, or when it is unset
        ``max_body_size`` and gRPC's largest."""
        if self.grpc_max_message_size is not None:
            return self.grpc_max_message_size, self.grpc_max_message_size
        return self.max_body_size, GRPC_LARGEST_MESSAGE

    @property
    def autoscale_range(self) -> tuple[int, int]:
        """``autoscale`` as (min, max); (replicas, replicas) when it is unset."""
        if self.autoscale is None:
            return self.replicas, self.replicas
        low, high = self.autoscale.split(":")
        return int(low), int(high)


OwnSettings = TypeVar("OwnSettings", bound=DialectSettings)


def view(settings: DialectSettings, kind: type[OwnSettings]) -> OwnSettings:
    """``settings`` as ``kind``: its fields with the values ``settings`` has (``kind``'s defaults for
    the ones it lacks). How a dialect gets its own settings out of the server's, and a graph its
    nodes' out of its own."""
    given = {name: getattr(settings, name) for name in kind.model_fields if hasattr(settings, name)}
    return kind.model_validate(given)
