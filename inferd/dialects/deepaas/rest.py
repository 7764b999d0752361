"""DEEPaaS's V2 REST API (spec §2-§7): versions, model metadata, predict and training routes under
``--base-path``, with its exact trailing slashes, 308 redirects, 405 with ``Allow``, 402 for disabled
endpoints and text/plain error bodies. The predict route is `predict.Predict`, a bare endpoint on a
fixed path per model, which the server calls directly.

With an empty base path two DEEPaaS paths are also V2 Open Inference Protocol paths: ``GET /v2`` and
``GET /v2/models/<name>`` stay V2's (server and model metadata) instead of redirecting.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from inferd import __version__
from inferd.core.dataplane import DataPlane
from inferd.dialects.deepaas import responses, swagger, training, ui
from inferd.dialects.deepaas.model import DeepaasModel, MetadataFailed
from inferd.dialects.deepaas.predict import Predict
from inferd.dialects.deepaas.settings import DeepaasSettings
from inferd.protocols.fallback import ANY_METHOD
from inferd.protocols.forms import UploadLimits

MODELS_PREFIX = "/v2/models/"
Handler = Callable[[Request], Awaitable[Response]]


def allow(methods: tuple[str, ...], handler: Handler) -> Handler:
    """Only ``methods`` (HEAD is not implied, as in aiohttp); anything else is 405 with ``Allow``."""

    async def answer(request: Request) -> Response:
        if request.method not in methods:
            return responses.method_not_allowed(methods)
        return await handler(request)

    return answer


class Redirects(Route):
    """Every other path: a 308 to the path with a slash appended or repeated slashes merged when that
    is a DEEPaaS path (as aiohttp's normalize_path_middleware did), else DEEPaaS's text 404. It only
    matches partially, so V2's routes and their 405s come first.

    Slash-less paths under ``/v2/`` are V2's when no DEEPaaS path fixes them, except under
    ``/v2/models/``: there DEEPaaS's 404 answers what V2 does not route (rather than Starlette's 307
    to a slash path that then 404s), and every path of a model that is not served is DEEPaaS's 404
    whatever the method (V2 only keeps ``GET /v2/models/<name>``, its own 404 for that model)."""

    def __init__(self, known: Callable[[str], bool], served: Callable[[str], bool]) -> None:
        self.known, self.served = known, served
        super().__init__("/{path:path}", self.answer, methods=ANY_METHOD)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        path = scope.get("path", "")
        v2_only = (path == "/v2" or path.startswith("/v2/")) and not path.endswith("/")
        if match is Match.FULL and v2_only and not self.fixed(path):
            if path.startswith(MODELS_PREFIX):
                name = path[len(MODELS_PREFIX) :].split("/", 1)[0]
                return (Match.PARTIAL if self.served(name) else Match.FULL), child
            return Match.NONE, {}  # V2's own answer; paths ending in "/" are DEEPaaS's (never stripped)
        return (Match.PARTIAL if match is Match.FULL else match), child

    def fixed(self, path: str) -> str | None:
        merged = re.sub("/{2,}", "/", path)
        for candidate in (merged, merged + "/"):
            if candidate != path and self.known(candidate):
                return candidate
        return None

    async def answer(self, request: Request) -> Response:
        target = self.fixed(request.url.path)
        if target is None:
            return responses.text(404)
        query = request.url.query
        response = RedirectResponse(target + (f"?{query}" if query else ""), status_code=308)
        response.body = b"308: Permanent Redirect"
        response.headers["content-length"] = str(len(response.body))
        response.headers["content-type"] = responses.TEXT_TYPE
        return response


def routes(dataplane: DataPlane, settings: DeepaasSettings) -> list[BaseRoute]:
    base = settings.base_path.rstrip("/")
    names = dataplane.registry.names()
    jobs = training.Jobs(settings) if settings.train_endpoint else None
    upload_limits = UploadLimits.of(settings)

    def model(name: str) -> DeepaasModel:
        found = dataplane.registry.get(name)
        assert isinstance(found, DeepaasModel)
        return found

    def versions_document() -> dict[str, Any]:
        links = [{"rel": "describedby", "type": "application/json", "href": f"{base}/swagger.json"}]
        if settings.doc_endpoint:
            links.insert(0, {"rel": "help", "type": "text/html", "href": f"{base}/api"})
        return {"versions": [version_document()], "links": links}

    def version_document() -> dict[str, Any]:
        return {
            "version": "stable",
            "id": "v2",
            "links": [{"rel": "self", "type": "application/json", "href": f"{base}/v2/"}],
        }

    async def versions(request: Request) -> Response:
        return responses.json(versions_document())

    async def v2(request: Request) -> Response:
        return responses.json(version_document())

    async def debug(request: Request) -> Response:
        return Response(status_code=204)

    async def models(request: Request) -> Response:
        return _metadata_answer(lambda: {"models": [model(name).document(base) for name in names]})

    def metadata(name: str) -> Handler:
        async def answer(request: Request) -> Response:
            return _metadata_answer(lambda: model(name).document(base))

        return answer

    async def swagger_json(request: Request) -> Response:
        return responses.json(
            swagger.document(
                [model(name).swagger(name) for name in names],
                version=__version__,
                base_path=base,
                predict=settings.predict_endpoint,
                train=settings.train_endpoint,
            )
        )

    table: list[BaseRoute] = [
        Route(base or "/", allow(("GET",), versions), methods=ANY_METHOD),
        Route(f"{base}/v2/", allow(("GET",), v2), methods=ANY_METHOD),
        Route(f"{base}/v2/debug/", allow(("GET",), debug), methods=ANY_METHOD),
        Route(f"{base}/v2/models/", allow(("GET",), models), methods=ANY_METHOD),
        Route(f"{base}/swagger.json", allow(("GET",), swagger_json), methods=ANY_METHOD),
        Route(f"{base}/openapi.json", allow(("GET",), swagger_json), methods=ANY_METHOD),
    ]
    for name in names:
        prefix = f"{base}/v2/models/{name}"
        table.append(Route(f"{prefix}/", allow(("GET",), metadata(name)), methods=ANY_METHOD))
        predict = Predict(dataplane, name, settings.predict_endpoint, upload_limits)
        table.append(Route(f"{prefix}/predict/", predict, methods=ANY_METHOD))
        table += training.routes(prefix, name, model, jobs)
    if settings.doc_endpoint:
        table += ui.routes(base)
    exact = {route.path for route in table if isinstance(route, Route)}
    train_uuid = re.compile(rf"^{re.escape(base)}/v2/models/[^/]+/train/[0-9a-f]{{32}}$")
    table.append(Redirects(lambda path: path in exact or bool(train_uuid.match(path)), names.__contains__))
    return table


def _metadata_answer(document: Callable[[], Any]) -> Response:
    """A metadata document, or DEEPaaS's plain 500 when a model's get_metadata failed."""
    try:
        return responses.json(document())
    except MetadataFailed:
        return responses.internal_error()
