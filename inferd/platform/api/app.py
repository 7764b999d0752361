"""The control process's HTTP app: every family of routes (the control API; the ABEJA-compatible API,
the console page, ``/metrics``... as they join `FAMILIES`) behind the server's own middleware (request
ids and body limits, the ``Host`` check, bearer tokens) and the cross-site rule on every route that
changes state. Bodies are held to ``max_api_body_size`` but on the routes a family declares `Sized`
(`inferd.server.limits`): archive uploads take ``max_bundle_size``, ABEJA's inferences
``max_body_size``."""

from __future__ import annotations

from collections.abc import Callable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute

from inferd.platform.abeja import AbejaCredentials, Presigner, abeja_routes
from inferd.platform.abeja.job_tokens import JobTokens
from inferd.platform.api.routes import ControlAPI, routes
from inferd.platform.api.runs import run_routes
from inferd.platform.console import console_login, console_routes
from inferd.platform.manager import Platform
from inferd.platform.settings import PlatformSettings
from inferd.platform.workflows.routes import workflow_routes
from inferd.protocols import prometheus
from inferd.server.auth import BearerAuth, Tokens, open_routes
from inferd.server.errors import EXCEPTION_HANDLERS
from inferd.server.limits import BodyLimit, RouteLimits
from inferd.server.middleware import RequestContext
from inferd.server.origins import HostCheck, OriginPolicy, guard_control_routes, host_policy

Family = Callable[[Platform, PlatformSettings], list[BaseRoute]]


def control_routes(platform: Platform, settings: PlatformSettings) -> list[BaseRoute]:
    return routes(ControlAPI(platform, settings.max_bundle_size))


def metrics_routes(platform: Platform, settings: PlatformSettings) -> list[BaseRoute]:
    """``/metrics``: this process's registry, the gateway's series (`inferd.platform.gateway.metrics`)
    among them; behind the bearer token like every route, as on a model server's HTTP port."""
    return list(prometheus.routes())


#: The route families the control process serves, in the order they are tried.
FAMILIES: tuple[Family, ...] = (
    control_routes,
    run_routes,
    workflow_routes,
    console_routes,
    abeja_routes,
    metrics_routes,
)


def create_control_app(platform: Platform, settings: PlatformSettings) -> Starlette:
    table = [route for family in FAMILIES for route in family(platform, settings)]
    guard_control_routes(table, OriginPolicy(settings.allowed_origins))
    # a small body limit for every route but those declared Sized (archive uploads, inferences)
    limits = RouteLimits(table, BodyLimit(settings.max_api_body_size, "INFERD_MAX_API_BODY_SIZE"))
    context = Middleware(
        RequestContext,
        max_body_size=settings.max_api_body_size,
        access_log=settings.access_log,
        limit_of=limits,
    )
    middleware = [context]
    policy = host_policy(settings)
    if policy is not None:
        middleware.append(Middleware(HostCheck, policy=policy))
    # INFERD_AUTH_TOKENS, else the token generated at start (`inferd.platform.admin_token`)
    control_tokens = settings.control_tokens()
    if control_tokens:
        tokens, token = Tokens(control_tokens), control_tokens[0]
        # ABEJA's clients send HTTP Basic, and their presigned uploads nothing: made into a bearer token
        # and training jobs their own tokens (`JobTokens`), taken for what each job may do
        jobs = JobTokens((settings.data_dir / "platform").resolve())
        middleware.append(Middleware(AbejaCredentials, token=token, presigner=Presigner(token), jobs=jobs))
        # the console's sign-in cookie is a credential too (its form and stylesheet need none)
        login = console_login(tokens)
        # ``/`` is only a redirect to the console (whose page asks for the token): open to GET
        middleware.append(Middleware(BearerAuth, tokens=tokens, is_open=open_routes(("/",)), login=login))
    return Starlette(routes=table, middleware=middleware, exception_handlers=EXCEPTION_HANDLERS)
