"""The HTTP surface of a Cortex 0.12-0.33 predictor class, as Cortex's FastAPI server answered.

``POST <endpoint>``: the payload parsed by its content type (JSON → the parsed value, a form →
Starlette's ``FormData``, ``text/plain`` → ``str``, anything else → ``bytes``); the answer by what
``predict`` returned (``bytes`` → ``application/octet-stream``, ``str`` → ``text/plain``, a Starlette or
FastAPI ``Response`` as it is, anything else → JSON). Errors as Cortex answered them: malformed JSON
400 ``{"error": ...}``, an unreadable form 400 text, an ``HTTPException`` the predictor raised its
status and detail, anything else the predictor raised 500 ``internal server error`` (logged with its
traceback). ``GET <endpoint>`` answers Cortex's summary (with the model's input signatures for the ONNX
and TensorFlow types).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from inferd.core import metrics
from inferd.core.dataplane import DataPlane
from inferd.core.errors import InferdError
from inferd.dialects.cortex.adapter_classes import ClassApi
from inferd.dialects.cortex.config import ApiConfig
from inferd.dialects.cortex.predictor_classes import HANDLER_METHODS
from inferd.dialects.cortex.rest import CORS, PREFLIGHT, PROTOCOL
from inferd.dialects.cortex.tracker import track

logger = logging.getLogger("inferd.cortex")

SUMMARY = "make a prediction by sending a post request to this endpoint with a json payload"
CORS_HEADERS = {key.decode(): value.decode() for key, value in CORS}


async def parse_payload(request: Request) -> Any:
    """The payload as Cortex's ``parse_payload`` middleware made it; a Response for a bad body."""
    content_type = request.headers.get("content-type", "").lower()
    if content_type.startswith(("multipart/form", "application/x-www-form-urlencoded")):
        try:
            return await request.form()
        except Exception as exc:
            return PlainTextResponse(str(exc), 400)
    body = await request.body()
    if content_type.startswith("application/json"):
        try:
            return json.loads(body)
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, 400)
    if content_type.startswith("text/plain"):
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return JSONResponse({"error": f"text/plain body is not UTF-8: {exc}"}, 400)
    return body


def to_response(result: Any) -> Response:
    if isinstance(result, Response):
        return result
    if isinstance(result, (bytes, bytearray)):
        return Response(bytes(result), media_type="application/octet-stream")
    if isinstance(result, str):
        return Response(result, media_type="text/plain")
    try:
        body = json.dumps(result)
    except (TypeError, ValueError) as exc:
        logger.error(
            "predict returned %s: %s; return an object that is JSON serializable, bytes, a string, "
            "or a starlette Response",
            type(result).__name__,
            exc,
        )
        return PlainTextResponse("internal server error", 500)
    return Response(body, media_type="application/json")


class ClassPredict:
    """``POST <endpoint>`` of one predictor class."""

    def __init__(self, dataplane: DataPlane, api: ApiConfig) -> None:
        self.dataplane, self.name, self.tracker = dataplane, api.name, api.tracker
        self.summary = Summary(dataplane, api)
        metrics.series(api.name, PROTOCOL)

    async def handle(self, request: Request) -> Response:
        model = self.dataplane.registry.get(self.name)
        method = request.method
        if isinstance(model, ClassApi) and method not in model.predictor_class.methods:
            if method == "GET":
                return await self.summary.handle(request)
            return _cors(JSONResponse({"detail": "Method Not Allowed"}, 405))
        payload = await parse_payload(request) if method != "GET" else None
        if isinstance(payload, Response):
            return _cors(payload)
        with self.dataplane.call(self.name, PROTOCOL, ClassApi) as call:
            model = call.model
            try:
                result = await call.run(
                    lambda: model.call_async(payload, request.query_params, request.headers, method)
                )
            except InferdError:
                raise
            except HTTPException as exc:
                call.ok = exc.status_code < 500
                return _cors(Response(str(exc.detail), exc.status_code))
            except Exception:
                logger.exception("api %s: predict failed", self.name)
                call.ok = False
                return _cors(PlainTextResponse("internal server error", 500))
        if self.tracker is not None and not isinstance(result, (bytes, Response)):
            track(self.name, self.tracker, result)
        return _cors(to_response(result))


class Summary:
    """``GET <endpoint>``: Cortex's summary of the API."""

    def __init__(self, dataplane: DataPlane, api: ApiConfig) -> None:
        self.dataplane, self.name = dataplane, api.name

    async def handle(self, request: Request) -> Response:
        body: dict[str, Any] = {"message": SUMMARY}
        model = self.dataplane.registry.get(self.name)
        if isinstance(model, ClassApi):
            signature = model.signature()
            if signature is not None:
                body["model_signatures"] = signature["signature"]
        return _cors(JSONResponse(body))


def _cors(response: Response) -> Response:
    response.headers.update(CORS_HEADERS)
    return response


def class_routes(dataplane: DataPlane, api: ApiConfig, path: str) -> list[BaseRoute]:
    """``POST`` and ``GET`` (the summary) of a predictor; every method a Handler may answer (those it
    does not define answer 405, GET the summary); and the CORS preflight."""
    methods = list(HANDLER_METHODS) if api.handler_class else ["POST", "GET"]
    return [
        Route(path, ClassPredict(dataplane, api).handle, methods=methods),
        Route(path, PREFLIGHT, methods=["OPTIONS"]),  # Cortex's CORS middleware answered preflights
    ]
