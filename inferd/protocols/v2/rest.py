"""V2 REST routes. Each endpoint decodes, calls the data plane, and encodes; nothing else.

Routes are declared once as a table; the ``/versions/{version}`` variants are generated from it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope

from inferd.core import tracing
from inferd.core.dataplane import DataPlane
from inferd.core.types import ModelMetadata, TensorSpec
from inferd.protocols import asgi, cloudevents
from inferd.protocols.compression import inflate
from inferd.protocols.control import ControlRoute
from inferd.protocols.json import JSONResponse
from inferd.protocols.v2 import openapi
from inferd.protocols.v2.http_codec import decode_request, encode_response_parts
from inferd.protocols.v2.repository import load_request
from inferd.protocols.v2.schema import RepositoryIndexBody, RepositoryLoadBody, parse

HEADER_LENGTH = "inference-header-content-length"
HEADER_LENGTH_BYTES = HEADER_LENGTH.encode()
#: Health and readiness: answered without authentication, for probes.
HEALTH_PATHS = ("/v2/health/live", "/v2/health/ready")
MODEL_READY_PATH = re.compile(r"/v2/models/[^/]+(/versions/[^/]+)?/ready")
Endpoint = Callable[[Request], Awaitable[Response]]


def metadata_body(metadata: ModelMetadata) -> dict[str, Any]:
    body: dict[str, Any] = {"name": metadata.name}
    if metadata.versions:
        body["versions"] = list(metadata.versions)
    body["platform"] = metadata.platform
    body["inputs"] = [_spec_body(spec) for spec in metadata.inputs]
    body["outputs"] = [_spec_body(spec) for spec in metadata.outputs]
    return body


def _spec_body(spec: TensorSpec) -> dict[str, Any]:
    return {"name": spec.name, "datatype": spec.datatype, "shape": list(spec.shape)}


def _ok_or_400(ready: bool) -> Response:
    return Response(status_code=200 if ready else 400)


JSON_HEADERS = ((b"content-type", b"application/json"),)
BINARY_CONTENT_TYPE = (b"content-type", b"application/octet-stream")


class Infer(asgi.BareEndpoint):
    """``POST .../infer``, the hottest route."""

    def __init__(self, dataplane: DataPlane, max_body_size: int) -> None:
        self.dataplane = dataplane
        #: The limit of an inflated body (``Content-Encoding: gzip|deflate``, which tritonclient can send).
        self.max_body_size = max_body_size

    async def answer(self, scope: Scope, receive: Receive) -> asgi.Answer:
        params = scope["path_params"]
        name, version = params["name"], params.get("version")
        self.dataplane.model_ready(name, version)  # an unknown model is 404 whatever the body holds
        encoding = asgi.header(scope, b"content-encoding")
        body = inflate(await asgi.read_body_buffer(receive, scope), encoding, self.max_body_size)
        length, payloads = asgi.header(scope, HEADER_LENGTH_BYTES), self.dataplane.payloads
        logged = None
        if payloads is not None:
            content_type = asgi.header(scope, b"content-type")
            logged = cloudevents.log_rest(payloads, name, bytes(body), content_type, length)
        tracer = tracing.tracer
        if tracer is None:
            inference = decode_request(body, length)
        else:
            inference = tracer.step("inferd.decode", decode_request, body, length)
        response = await self.dataplane.infer(name, version, inference, "rest")
        if tracer is None:
            content, header_length = encode_response_parts(response, inference)
        else:
            content, header_length = tracer.step("inferd.encode", encode_response_parts, response, inference)
        if logged is not None:
            joined = content if isinstance(content, bytes) else b"".join(content)
            cloudevents.log_rest_response(logged, joined, header_length)
        if header_length is None:
            return asgi.Answer(200, content, JSON_HEADERS)
        return asgi.Answer(
            200, content, (BINARY_CONTENT_TYPE, (HEADER_LENGTH_BYTES, str(header_length).encode()))
        )


class V2Endpoints:
    def __init__(self, dataplane: DataPlane) -> None:
        self.dataplane = dataplane

    async def live(self, request: Request) -> Response:
        return _ok_or_400(self.dataplane.live())

    async def ready(self, request: Request) -> Response:
        return _ok_or_400(self.dataplane.ready())

    async def server_metadata(self, request: Request) -> Response:
        server = self.dataplane.server_metadata()
        return JSONResponse(
            {"name": server.name, "version": server.version, "extensions": list(server.extensions)}
        )

    async def model_ready(self, request: Request) -> Response:
        name, version = _model_of(request)
        return _ok_or_400(self.dataplane.model_ready(name, version))

    async def model_metadata(self, request: Request) -> Response:
        name, version = _model_of(request)
        return JSONResponse(metadata_body(self.dataplane.model_metadata(name, version)))

    async def statistics(self, request: Request) -> Response:
        name, version = request.path_params.get("name"), request.path_params.get("version")
        return JSONResponse({"model_stats": self.dataplane.model_statistics(name, version)})

    async def config(self, request: Request) -> Response:
        name, version = _model_of(request)
        return JSONResponse(self.dataplane.model_config(name, version))

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(openapi.DOCUMENT)

    async def repository_index(self, request: Request) -> Response:
        query: RepositoryIndexBody = parse(RepositoryIndexBody, await request.body())
        return JSONResponse(
            [entry.__dict__ for entry in self.dataplane.repository_index(ready_only=query.ready)]
        )

    async def load(self, request: Request) -> Response:
        body: RepositoryLoadBody = parse(RepositoryLoadBody, await request.body())
        found = load_request(body.parameters, files_are_base64=True)
        await self.dataplane.load_model(request.path_params["name"], None, found.config, found.files)
        return Response(status_code=200)

    async def unload(self, request: Request) -> Response:
        await self.dataplane.unload_model(request.path_params["name"])
        return Response(status_code=200)


def _model_of(request: Request) -> tuple[str, str | None]:
    return request.path_params["name"], request.path_params.get("version")


#: The repository extension's control routes: they change which models are served.
LOAD_PATH = "/v2/repository/models/{name}/load"
UNLOAD_PATH = "/v2/repository/models/{name}/unload"


def routes(dataplane: DataPlane, max_body_size: int) -> list[Route]:
    endpoints = V2Endpoints(dataplane)
    infer = Infer(dataplane, max_body_size)
    model_routes: list[tuple[str, Endpoint | ASGIApp, str]] = [
        ("/infer", infer, "POST"),
        ("/ready", endpoints.model_ready, "GET"),
        ("/stats", endpoints.statistics, "GET"),
        ("/config", endpoints.config, "GET"),
        ("", endpoints.model_metadata, "GET"),
    ]
    table: list[tuple[str, Endpoint | ASGIApp, str]] = [
        ("/v2/models/stats", endpoints.statistics, "GET")
    ]  # before the model named "stats"
    # model routes next: the router tries them in order
    for suffix, endpoint, method in model_routes:
        table.append(("/v2/models/{name}" + suffix, endpoint, method))
        table.append(("/v2/models/{name}/versions/{version}" + suffix, endpoint, method))
    table += [
        ("/v2", endpoints.server_metadata, "GET"),
        ("/v2/health/live", endpoints.live, "GET"),
        ("/v2/health/ready", endpoints.ready, "GET"),
        (openapi.PATH, endpoints.openapi, "GET"),
        ("/v2/repository/index", endpoints.repository_index, "POST"),
        (LOAD_PATH, endpoints.load, "POST"),
        (UNLOAD_PATH, endpoints.unload, "POST"),
    ]
    return [
        (ControlRoute if path in (LOAD_PATH, UNLOAD_PATH) else Route)(path, endpoint, methods=[method])
        for path, endpoint, method in table
    ]
