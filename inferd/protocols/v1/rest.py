"""KServe's V1 REST routes (TensorFlow Serving's shape), for every model: ``GET /v1/models``,
``GET /v1/models/<name>`` (readiness: ``{"name", "ready": true}``, else 503), ``POST
/v1/models/<name>:predict`` (also under ``/versions/<v>``), and ``:explain``, ``:classify``,
``:regress`` answering 501. Errors are KServe's ``{"error": "..."}`` with inferd's statuses. They
are inference routes: behind the token, the body limit and the model's gate as V2's infer is."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from inferd.core.dataplane import DataPlane
from inferd.core.errors import ModelNotReady
from inferd.protocols.json import JSONResponse
from inferd.protocols.v1.codec import decode, encode

#: Verbs of TensorFlow Serving and KServe that inferd does not answer.
NOT_IMPLEMENTED = ("explain", "classify", "regress")


class V1Endpoints:
    def __init__(self, dataplane: DataPlane) -> None:
        self.dataplane = dataplane

    async def models(self, request: Request) -> Response:
        names = dict.fromkeys(entry.name for entry in self.dataplane.repository_index())
        return JSONResponse({"models": list(names)})

    async def model_ready(self, request: Request) -> Response:
        name, version = request.path_params["name"], request.path_params.get("version")
        if not self.dataplane.model_ready(name, version):
            raise ModelNotReady(f"Model with name {name} is not ready.")
        return JSONResponse({"name": name, "ready": True})

    async def predict(self, request: Request) -> Response:
        name, version = request.path_params["name"], request.path_params.get("version")
        metadata = self.dataplane.model_metadata(name, version)  # unknown: 404, not ready: 503
        inference, rows = decode(await request.body(), metadata)
        response = await self.dataplane.infer(name, version, inference, "v1")
        return JSONResponse(encode(response, rows))

    async def not_implemented(self, request: Request) -> Response:
        name = request.path_params["name"]
        self.dataplane.model_metadata(name, request.path_params.get("version"))
        verb = request.url.path.rpartition(":")[2]
        return JSONResponse({"error": f"{verb} is not implemented for model {name}"}, status_code=501)


def routes(dataplane: DataPlane) -> list[Route]:
    endpoints = V1Endpoints(dataplane)
    found = [Route("/v1/models", endpoints.models, methods=["GET"])]
    for prefix in ("/v1/models/{name}", "/v1/models/{name}/versions/{version}"):
        found.append(Route(prefix + ":predict", endpoints.predict, methods=["POST"]))
        found += [
            Route(f"{prefix}:{verb}", endpoints.not_implemented, methods=["POST"]) for verb in NOT_IMPLEMENTED
        ]
        found.append(Route(prefix, endpoints.model_ready, methods=["GET"]))
    return found
