"""The composition root of one server process: settings → dialect → registry → data plane → app."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.types import Lifespan

from inferd import __version__
from inferd.core import tracing
from inferd.core.control import SharedControl
from inferd.core.dataplane import DataPlane
from inferd.core.limits import Gates
from inferd.core.model_settings import limits
from inferd.core.payloads import payload_log
from inferd.core.registry import ModelRegistry
from inferd.core.settings import DialectSettings, ServerSettings, view
from inferd.core.types import ServerMetadata
from inferd.dialects import get_dialect, resolve_dialect
from inferd.dialects.base import Dialect, ServesMetrics, ServesRepository
from inferd.protocols import cloudevents, prometheus
from inferd.protocols.v1 import rest as v1_rest
from inferd.protocols.v2 import rest as v2_rest
from inferd.server import ui
from inferd.server.auth import BearerAuth, Tokens, open_routes, tokens_of
from inferd.server.errors import EXCEPTION_HANDLERS, TYPED_ERROR_HANDLERS
from inferd.server.fast import FastInfer
from inferd.server.middleware import RequestContext, RequestIds
from inferd.server.origins import HostCheck, HostPolicy, OriginPolicy, guard_control_routes, host_policy
from inferd.server.routing import DirectRoutes, IndexedRouter, direct_routes, leading_routes
from inferd.server.tracing import TracedRequests
from inferd.server.ui.describe import Describer
from inferd.server.ui.login import Login
from inferd.server.ui.login import routes as login_routes

EXTENSIONS = (
    "binary_tensor_data",
    "classification",
    "model_configuration",
    "model_repository",
    "statistics",
)


@dataclass(frozen=True)
class Runtime:
    """Everything one process serves, built once from the settings."""

    settings: ServerSettings
    dialect: Dialect[Any]
    #: The dialect's own part of the settings, all it is given.
    dialect_settings: DialectSettings
    registry: ModelRegistry
    dataplane: DataPlane

    async def close(self) -> None:
        """Unload the models and send what payload logging still holds."""
        await self.registry.unload_all()
        if self.dataplane.payloads is not None:
            await self.dataplane.payloads.close()

    @property
    def poll_seconds(self) -> float | None:
        """How often a model repository is read again for changes; None when nothing is polled."""
        dialect = self.dialect
        return dialect.poll_seconds(self.dialect_settings) if isinstance(dialect, ServesRepository) else None


def build_runtime(settings: ServerSettings, dialect: Dialect[Any] | None = None) -> Runtime:
    """Resolve the target into registered (not yet loaded) models behind one data plane; ``dialect``
    replaces the one the settings name (an engine's variant of it)."""
    tracing.configure(settings.tracing)
    dialect = dialect or resolve_dialect(settings.dialect, settings.target)
    own = view(settings, dialect.settings_type)
    registry = _registry(dialect, own, settings.graceful_timeout)
    for served in dialect.models(own):
        registry.add_served(served)
    gates = Gates(lambda name: limits(settings, name))
    payloads = payload_log(settings, cloudevents.sender(settings.payload_log_namespace, settings.port))
    dataplane = DataPlane(registry, ServerMetadata("inferd", __version__, EXTENSIONS), gates, payloads)
    return Runtime(settings, dialect, own, registry, dataplane)


def _registry(dialect: Dialect[Any], own: DialectSettings, drain_seconds: float) -> ModelRegistry:
    """An empty registry; for a model repository, one that reads it and keeps within its limit. When
    the server has other workers, they hear of this one's loads and unloads (`SharedControl`)."""
    control = SharedControl.from_environment()
    if not isinstance(dialect, ServesRepository):
        return ModelRegistry(drain_seconds=drain_seconds, control=control)
    return ModelRegistry(dialect.source(own), dialect.max_loaded(own), drain_seconds, control)


def create_app(runtime: Runtime, lifespan: Lifespan[Starlette] | None = None) -> Starlette:
    """The ASGI app of one process. The local engine loads the models before it serves; hosts that
    only run ASGI apps (Ray Serve replicas) pass ``models_lifespan`` to load them on startup."""
    settings, dataplane = runtime.settings, runtime.dataplane
    dialect_routes = runtime.dialect.routes(dataplane, runtime.dialect_settings)
    describer = Describer(runtime.dialect, dataplane, runtime.dialect_settings)
    at_root = not ui.claims_root(dialect_routes)
    tokens = tokens_of(settings)
    login = None if tokens is None else Login(tokens, (ui.PREFIX, "/") if at_root else (ui.PREFIX,))
    routes = [
        *v2_rest.routes(dataplane, settings.max_body_size),
        *v1_rest.routes(dataplane),
        *prometheus.routes(),
        *(login_routes(login) if login is not None else ()),
        *ui.routes(describer, at_root=at_root),
        # Last: a dialect may end with a fallback answering unknown paths its own way.
        *dialect_routes,
    ]
    guard_control_routes(routes, OriginPolicy(settings.allowed_origins))
    router = IndexedRouter(routes, lifespan=lifespan)
    ids, hosts = RequestIds(), host_policy(settings)
    middleware = [
        Middleware(
            RequestContext, max_body_size=settings.max_body_size, access_log=settings.access_log, ids=ids
        ),
        *_host_check(hosts),
        *_authentication(runtime, tokens, login),
        Middleware(
            DirectRoutes,
            routes=direct_routes(router.fixed),
            handlers=TYPED_ERROR_HANDLERS,
            leading=leading_routes(router.routes),
        ),
    ]
    if tracing.tracer is not None:  # outermost: the request's span covers all of it
        middleware.insert(0, Middleware(TracedRequests, tracer=tracing.tracer))
    app = Starlette(middleware=middleware, exception_handlers=EXCEPTION_HANDLERS)
    app.router = router
    infer = v2_rest.Infer(dataplane, settings.max_body_size)
    app.state.fast_infer = FastInfer(infer, ids, settings.max_body_size, settings.access_log, hosts, tokens)
    return app


def fast_infer_of(app: object) -> FastInfer | None:
    """The `FastInfer` of an app `create_app` built (what a server's connections may call instead
    of the app for V2 infer); None for any other app."""
    state = getattr(app, "state", None)
    fast = getattr(state, "fast_infer", None)
    return fast if isinstance(fast, FastInfer) else None


def models_lifespan(runtime: Runtime) -> Lifespan[Starlette]:
    """An ASGI lifespan that loads the runtime's models on startup and unloads them on shutdown."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await runtime.registry.load_all()
        try:
            yield
        finally:
            await runtime.close()

    return lifespan


def _host_check(policy: HostPolicy | None) -> list[Middleware]:
    """The ``Host`` check against DNS rebinding (`inferd.server.origins`), before authentication: a
    page on a foreign name learns nothing, not even whether a token is needed."""
    return [] if policy is None else [Middleware(HostCheck, policy=policy)]


def _authentication(runtime: Runtime, tokens: Tokens | None, login: Login | None) -> list[Middleware]:
    """The bearer-token check, inside the request context (a 401 has a request id and an access
    line), on every route but V2's and the dialect's health checks and the try-it page's login
    form; nothing when no token is set."""
    if tokens is None:
        return []
    is_open = open_routes((*v2_rest.HEALTH_PATHS, *runtime.dialect.health_paths), (v2_rest.MODEL_READY_PATH,))
    return [Middleware(BearerAuth, tokens=tokens, is_open=is_open, login=login)]


def create_metrics_app(settings: ServerSettings | None = None) -> Starlette:
    """The Prometheus endpoint alone: inferd's ``/metrics``, or on the ``metrics_port`` of a dialect
    whose platform scrapes a metrics server of its own (Seldon's), that server's routes."""
    dialect = get_dialect(settings.dialect) if settings is not None and settings.dialect != "auto" else None
    routes = dialect.metrics_routes() if isinstance(dialect, ServesMetrics) else prometheus.routes()
    return Starlette(routes=routes)
