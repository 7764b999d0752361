"""Routes of the console: the page (where ``/`` of the control port leads), its static files (the
try-it page's stylesheet among them), the traffic it shows beside each service, and its sign-in when
the control process needs a token.

Everything else the page shows or changes it reads from the control API (`inferd.platform.api`)
with ``fetch`` from its own origin: the API's ``Origin`` rule lets those state-changing requests
through and refuses every other site's."""

from __future__ import annotations

import time
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from inferd import __version__
from inferd.platform.console.history import HISTORY
from inferd.platform.console.traffic import traffic
from inferd.platform.manager import Platform
from inferd.platform.settings import PlatformSettings
from inferd.protocols.json import JSONResponse
from inferd.server.auth import Tokens
from inferd.server.ui.login import Login
from inferd.server.ui.login import routes as login_routes
from inferd.server.ui.routes import STATIC as TRY_IT_STATIC

PREFIX = "/console"
STATIC = Path(__file__).resolve().parent / "static"
#: The console's own login cookie (`inferd.server.ui.login`): its value opens this control process
#: only, never a model server's try-it page.
PURPOSE = b"inferd platform console login, v1"
#: The page runs its one script and reads its own origin only: a value that slipped past the page's
#: escaping could still run nothing, load nothing and send nothing elsewhere; no other site frames it.
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}
FILES = {
    "console.js": STATIC / "console.js",
    "services.js": STATIC / "services.js",
    "services.css": STATIC / "services.css",
    "console.css": STATIC / "console.css",
    "training.js": STATIC / "training.js",
    "inferd.css": TRY_IT_STATIC / "inferd.css",
}


def console_login(tokens: Tokens) -> Login:
    """The sign-in of the console: a form at ``/console/login`` answering an ``HttpOnly``,
    ``SameSite=Strict`` cookie the control process's authentication takes like the bearer header."""
    return Login(tokens, (PREFIX, f"{PREFIX}/"), prefix=PREFIX, purpose=PURPOSE)


def console_routes(platform: Platform, settings: PlatformSettings) -> list[BaseRoute]:
    """The console's family of routes (`inferd.platform.api.app.FAMILIES`)."""
    # the control API's tokens (generated at start when none are set), for the sign-in
    tokens = Tokens(settings.control_tokens()) if settings.control_tokens() else None

    async def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers=HEADERS)

    async def to_page(request: Request) -> Response:
        return RedirectResponse(f"{PREFIX}/", 308)

    async def root(request: Request) -> Response:
        # the control port's own address, as a person types it, leads to the console
        return RedirectResponse(f"{PREFIX}/", 303)

    async def static(request: Request) -> Response:
        path = FILES.get(request.path_params["name"])
        if path is None:
            return JSONResponse({"error": "no such file"}, status_code=404)
        return FileResponse(path, headers=HEADERS)

    async def info(request: Request) -> Response:
        return JSONResponse(
            {"gateway_port": settings.gateway_port, "login": tokens is not None, "version": __version__}
        )

    async def deployment_traffic(request: Request) -> Response:
        deployment = platform.store.deployment(request.path_params["deployment"])
        services = platform.store.services(deployment.id)
        return JSONResponse(await traffic(services, platform.token_of, platform.routing.addresses))

    async def deployment_history(request: Request) -> Response:
        # the last hour of each service's and endpoint's traffic (`history`), for the charts
        deployment = platform.store.deployment(request.path_params["deployment"])
        services = platform.store.services(deployment.id)
        endpoints = platform.store.endpoints(deployment.id)
        return JSONResponse(
            {
                "interval": HISTORY.interval,
                "now": time.time(),
                "services": {s.id: HISTORY.of(f"service:{s.id}") for s in services},
                "endpoints": {e.name: HISTORY.of(f"endpoint:{e.name}") for e in endpoints},
            }
        )

    found: list[BaseRoute] = [
        Route("/", root, methods=["GET"]),
        Route(PREFIX, to_page, methods=["GET"]),
        Route(f"{PREFIX}/", page, methods=["GET"]),
        Route(f"{PREFIX}/static/{{name}}", static, methods=["GET"]),
        Route(f"{PREFIX}/api/info", info, methods=["GET"]),
        Route(f"{PREFIX}/api/deployments/{{deployment}}/traffic", deployment_traffic, methods=["GET"]),
        Route(f"{PREFIX}/api/deployments/{{deployment}}/history", deployment_history, methods=["GET"]),
    ]
    if tokens is not None:
        found += login_routes(console_login(tokens))
    return found
