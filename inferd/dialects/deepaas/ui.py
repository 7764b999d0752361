"""DEEPaaS's Swagger UI (spec §2, §10): ``<base>/api`` shows ``<base>/swagger.json`` with Swagger UI's files
from the installed swagger-ui-bundle package under ``<base>/static/swagger/``, never from a CDN, so the
docs work on a server without internet access. ``<base>/ui``, the pre-2.3 docs URL, only redirects.

Answers other than 200 use DEEPaaS's ``"<code>: <Reason>"`` text bodies. A missing asset matches no route,
so the dialect's own fallback answers it like any unknown path.
"""

from __future__ import annotations

import html
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope
from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]

from inferd.dialects.deepaas import responses

ASSETS = Path(swagger_ui_path).resolve()
GET = ("GET",)
#: aiohttp's static routes also answered HEAD.
GET_HEAD = ("GET", "HEAD")

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>DEEP as a Service API endpoint</title>
  <link rel="stylesheet" href="{static}/swagger-ui.css">
  <link rel="icon" type="image/png" href="{static}/favicon-32x32.png" sizes="32x32">
  <style>html {{ box-sizing: border-box; overflow-y: scroll; }} body {{ margin: 0; }}</style>
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="{static}/swagger-ui-bundle.js"></script>
  <script src="{static}/swagger-ui-standalone-preset.js"></script>
  <script>
    window.onload = function () {{
      window.ui = SwaggerUIBundle({{
        url: {url},
        dom_id: "#swagger-ui",
        deepLinking: true,
        validatorUrl: null,
        presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
        plugins: [SwaggerUIBundle.plugins.DownloadUrl],
        layout: "StandaloneLayout"
      }});
    }};
  </script>
</body>
</html>
"""
# validatorUrl: null keeps Swagger UI from sending the document to validator.swagger.io.


def page(base: str) -> str:
    """The ``/api`` page; the base path is escaped for HTML attributes and for the script."""
    static = html.escape(f"{base}/static/swagger", quote=True)
    url = json.dumps(f"{base}/swagger.json").replace("<", "\\u003c")
    return PAGE.format(static=static, url=url)


class Asset(Route):
    """``<base>/static/swagger/{file}``: a file of the bundle's folder. Paths that are not such a file
    (missing, a folder, ``..``, a symlink out) do not match at all."""

    def __init__(self, base: str) -> None:
        super().__init__(f"{base}/static/swagger/{{file:path}}", self.serve)
        self.methods = None  # serve() answers other methods itself

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match is Match.NONE or asset(child["path_params"]["file"]) is None:
            return Match.NONE, {}
        return match, child

    async def serve(self, request: Request) -> Response:
        if request.method not in GET_HEAD:
            return responses.method_not_allowed(GET_HEAD)
        found = asset(request.path_params["file"])
        if found is None:  # removed since matching
            return responses.text(404)
        return FileResponse(found)


def asset(name: str) -> Path | None:
    """The bundle's file called ``name``, if it is one and lies inside the bundle's folder."""
    try:
        found = (ASSETS / name).resolve()
        if found.is_relative_to(ASSETS) and found.is_file():
            return found
    except (OSError, ValueError):  # a NUL byte, a name too long
        pass
    return None


def routes(base_path: str = "") -> list[BaseRoute]:
    """``<base>/api``, ``<base>/ui`` and the assets. ``<base>/api/`` is not a route (404 upstream)."""
    base = base_path.rstrip("/")
    body = page(base)

    async def api(request: Request) -> Response:
        if request.method not in GET:
            return responses.method_not_allowed(GET)
        return HTMLResponse(body)

    async def ui(request: Request) -> Response:
        if request.method not in GET:
            return responses.method_not_allowed(GET)
        return responses.text(302, headers={"Location": f"{base}/api"})

    return [_any_method(f"{base}/api", api), _any_method(f"{base}/ui", ui), Asset(base)]


def _any_method(path: str, endpoint: Callable[[Request], Awaitable[Response]]) -> Route:
    """A route taking every method: Starlette would answer other methods of a function endpoint (even
    with ``methods=None``) with its own 405 and ``Allow: GET, HEAD``, not DEEPaaS's."""
    route = Route(path, endpoint)
    route.methods = None
    return route
