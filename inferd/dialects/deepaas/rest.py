"""DEEPaaS's V2 REST API (spec §2-§7): versions, model metadata, predict and training routes under
``--base-path``, with its exact trailing slashes, 308 redirects, 405 with ``Allow``, 402 for disabled
endpoints and text/plain error bodies.

With an empty base path two DEEPaaS paths are also V2 Open Inference Protocol paths: ``GET /v2`` and
``GET /v2/models/<name>`` stay V2's (server and model metadata) instead of redirecting.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from marshmallow import ValidationError
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from inferd import __version__
from inferd.core import metrics
from inferd.core.dataplane import DataPlane
from inferd.core.errors import InferdError
from inferd.core.settings import Settings
from inferd.dialects.deepaas import responses, swagger, training, ui, uploads
from inferd.dialects.deepaas.arguments import ACCEPT, ANY_TYPE, parse_or_answer
from inferd.dialects.deepaas.model import DeepaasModel, MetadataFailed
from inferd.protocols.fallback import ANY_METHOD
from inferd.protocols.forms import UploadLimits
from inferd.protocols.status import error_headers, status_of

logger = logging.getLogger("inferd.deepaas")

PROTOCOL = "deepaas"
MODELS_PREFIX = "/v2/models/"
JSON_ACCEPT = ("application/json", ANY_TYPE)
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


def routes(dataplane: DataPlane, settings: Settings) -> list[BaseRoute]:
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

    def predict(name: str) -> Handler:
        counted = metrics.series(name, PROTOCOL)

        async def answer(request: Request) -> Response:
            if not settings.predict_endpoint:
                return responses.text(402)
            started, ok = counted.begin(), False
            try:
                response = await _predict(model(name), request, dataplane, upload_limits)
                ok = response.status_code < 400
                return response
            finally:
                counted.end(started, ok)

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
        table.append(Route(f"{prefix}/predict/", allow(("POST",), predict(name)), methods=ANY_METHOD))
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


async def _predict(
    model: DeepaasModel, request: Request, dataplane: DataPlane, upload_limits: UploadLimits
) -> Response:
    if not model.has("predict"):
        return responses.text(501)
    parsed = await parse_or_answer(request, model.predict_args, upload_limits)
    if isinstance(parsed, Response):
        return parsed
    try:
        output = await dataplane.run(model.name, lambda: model.call_user(model.run_predict, parsed.values))
    except InferdError as exc:  # shed (503) or timed out (504)
        return responses.text(status_of(exc).http, exc.message, error_headers(exc))
    except Exception as exc:
        answer = responses.http_exception(exc)
        if answer is None:
            logger.exception("model %s failed to predict", model.entry_name)
            return responses.internal_error()
        return answer
    finally:
        uploads.remove(parsed.temp_files)
    wanted = parsed.values.get(ACCEPT) if ACCEPT in model.predict_args.fields else None
    if wanted and wanted not in JSON_ACCEPT:
        answer = responses.raw(output, str(wanted))
        if answer is None:
            logger.error(
                "model %s answered %s for accept %s", model.entry_name, type(output).__name__, wanted
            )
            return responses.internal_error()
        return answer
    if model.schema is not None:
        try:
            model.check_output(output)
        except ValidationError as exc:
            logger.error("model %s answer does not match its schema: %s", model.entry_name, exc.messages)
            return responses.text(500, responses.SCHEMA_FAILED)
        except Exception:
            logger.exception("validating the answer of model %s failed", model.entry_name)
            return responses.text(500, responses.SCHEMA_CRASHED)
        body = output
    else:
        body = {"status": "OK", "predictions": output}
    try:
        return responses.json(body)
    except TypeError:
        logger.error("model %s answered %s, which is not JSON", model.entry_name, type(output).__name__)
        close = getattr(output, "close", None)
        if callable(close):
            close()
        return responses.internal_error()
