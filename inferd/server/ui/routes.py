"""Routes of the try-it page: the two HTML pages, their static files and the JSON they read."""

from __future__ import annotations

import functools
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.staticfiles import StaticFiles

from inferd import __version__
from inferd.protocols.json import JSONResponse
from inferd.server.ui.describe import Describer

#: Where the page always is: no platform inferd speaks uses this path.
PREFIX = "/inferd"
STATIC = Path(__file__).resolve().parent / "static"
#: A path no route is written for: a route matching it as well as ``/`` answers every path.
_PROBE = "/inferd-probe/never/a/route"


def claims_root(routes: list[BaseRoute]) -> bool:
    """Whether one of ``routes`` is written for ``GET /`` (DEEPaaS's versions, ABEJA's endpoint), not a
    catch-all that answers every unknown path, ``/`` among them, with the platform's 404."""

    def matches(route: BaseRoute, path: str) -> bool:
        scope = {"type": "http", "path": path, "root_path": "", "method": "GET"}
        return route.matches(scope)[0] is not Match.NONE

    return any(matches(route, "/") and not matches(route, _PROBE) for route in routes)


@functools.cache
def at_root_page() -> str:
    """The list of models as ``/`` serves it: its links, relative to ``/inferd/``, made so from ``/``."""
    page = (STATIC / "index.html").read_text()
    for old, new in (
        ('="static/', '="inferd/static/'),
        ('href="./"', 'href="inferd/"'),
        ('href="../metrics"', 'href="metrics"'),
        ('href="api/models"', 'href="inferd/api/models"'),
    ):
        page = page.replace(old, new)
    return page


def routes(describer: Describer, at_root: bool) -> list[BaseRoute]:
    """The page under `PREFIX`, and at ``/`` too when ``at_root``."""

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    async def index_at_root(request: Request) -> Response:
        # the page's links are relative to /inferd/ (so it works under a gateway's /e/NAME/ too)
        return HTMLResponse(at_root_page())

    async def model_page(request: Request) -> Response:
        return FileResponse(STATIC / "model.html")

    async def models(request: Request) -> Response:
        body = {"server": {"name": "inferd", "version": __version__}, "models": describer.models()}
        return JSONResponse(body)

    async def model(request: Request) -> Response:
        described = describer.one(request.path_params["name"])
        return JSONResponse({**described, "server": {"name": "inferd", "version": __version__}})

    async def to_index(request: Request) -> Response:
        return RedirectResponse(f"{PREFIX}/", 308)

    found: list[BaseRoute] = [
        Route(PREFIX, to_index, methods=["GET"]),
        Route(f"{PREFIX}/", index, methods=["GET"]),
        Route(f"{PREFIX}/models/{{name}}", model_page, methods=["GET"]),
        Route(f"{PREFIX}/api/models", models, methods=["GET"]),
        Route(f"{PREFIX}/api/models/{{name}}", model, methods=["GET"]),
        Mount(f"{PREFIX}/static", app=StaticFiles(directory=STATIC), name="inferd-static"),
    ]
    if at_root:
        found.append(Route("/", index_at_root, methods=["GET"]))
    return found
