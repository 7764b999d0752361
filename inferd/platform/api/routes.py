"""The control API's routes: each decodes, calls one `Platform` operation, and answers the record.

Reads are plain routes; every route that changes state is a `ControlRoute`, refused from a foreign
``Origin`` (a page in a browser must not start or switch services behind its user's back)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Route

from inferd.core.errors import InvalidInput
from inferd.platform.api import openapi
from inferd.platform.api.bodies import EndpointBody, NewDeployment, NewService, ScalingBody, parse, record
from inferd.platform.manager import Platform
from inferd.platform.records import Endpoint
from inferd.platform.records import Route as Weighted
from inferd.protocols.control import ControlRoute
from inferd.protocols.forms import UploadLimits, read_form
from inferd.protocols.json import JSONResponse
from inferd.server.limits import BodyLimit, SizedControlRoute

PREFIX = "/platform/v1"
Handler = Callable[[Request], Awaitable[Response]]


def answer(value: Any, status_code: int = 200) -> JSONResponse:
    return JSONResponse(record(value), status_code=status_code)


def endpoint_record(endpoint: Endpoint) -> dict[str, Any]:
    """An endpoint as JSON, with its ``etag``: what a switch's ``If-Match`` names."""
    return {**record(endpoint), "etag": endpoint.etag}


class ControlAPI:
    """The handlers, over one platform."""

    def __init__(self, platform: Platform, upload_limit: int) -> None:
        self.platform = platform
        self.store = platform.store
        self.limits = UploadLimits(max_files=1, max_size=upload_limit)

    # ---- deployments ----

    async def deployments(self, request: Request) -> Response:
        return answer(self.store.deployments())

    async def create_deployment(self, request: Request) -> Response:
        body: NewDeployment = parse(NewDeployment, await request.body())
        return answer(self.platform.create_deployment(body.name, body.description), 201)

    async def deployment(self, request: Request) -> Response:
        return answer(self.store.deployment(request.path_params["deployment"]))

    async def delete_deployment(self, request: Request) -> Response:
        self.platform.delete_deployment(request.path_params["deployment"])
        return Response(status_code=204)

    # ---- versions ----

    async def versions(self, request: Request) -> Response:
        return answer(self.store.versions(self.store.deployment(request.path_params["deployment"]).id))

    async def create_version(self, request: Request) -> Response:
        """A multipart form: ``archive`` (a tar, tar.gz or zip of the project), ``label``, and
        optionally ``target``, ``dialect`` and ``environment`` (a JSON object of strings)."""
        form = await read_form(request, self.limits)
        try:
            archive = form.get("archive")
            if not isinstance(archive, UploadFile):
                raise InvalidInput("the form needs an 'archive' file: a tar, tar.gz or zip of the project")
            label = _text(form.get("label"), "label")
            environment = _environment(form.get("environment"))
            version = await asyncio.to_thread(
                self.platform.add_version,
                request.path_params["deployment"],
                label,
                archive.file,
                _text(form.get("target") or ".", "target"),
                _text(form.get("dialect") or "auto", "dialect"),
                environment,
            )
        finally:
            await form.close()
        return answer(version, 201)

    async def version(self, request: Request) -> Response:
        return answer(self.store.version(request.path_params["version"]))

    async def version_archive(self, request: Request) -> Response:
        version = self.store.version(request.path_params["version"])
        path = self.platform.artifacts.open(version.digest)
        name = f"{version.id}.tar.gz"
        return FileResponse(path, media_type="application/gzip", filename=name)

    async def delete_version(self, request: Request) -> Response:
        self.platform.delete_version(request.path_params["version"])
        return Response(status_code=204)

    # ---- services ----

    async def services(self, request: Request) -> Response:
        return answer(self.store.services(self.store.deployment(request.path_params["deployment"]).id))

    async def create_service(self, request: Request) -> Response:
        body: NewService = parse(NewService, await request.body())
        service = await self.platform.create_service(
            request.path_params["deployment"],
            body.version,
            body.workers,
            body.environment,
            body.engine,
            body.scaling(),
        )
        return answer(service, 201)

    async def replicas(self, request: Request) -> Response:
        """Its replicas beyond the first (whose state, port and process are the service's own)."""
        return answer(self.store.replicas(self.store.service(request.path_params["service"]).id))

    async def scale_service(self, request: Request) -> Response:
        """New scaling bounds and target (``replicas`` too: how many now)."""
        body: ScalingBody = parse(ScalingBody, await request.body())
        return answer(await self.platform.set_scaling(request.path_params["service"], body.scaling()))

    async def service(self, request: Request) -> Response:
        return answer(self.store.service(request.path_params["service"]))

    async def start_service(self, request: Request) -> Response:
        return answer(await self.platform.start_service(request.path_params["service"]))

    async def stop_service(self, request: Request) -> Response:
        return answer(await self.platform.stop_service(request.path_params["service"]))

    async def delete_service(self, request: Request) -> Response:
        await self.platform.delete_service(request.path_params["service"])
        return Response(status_code=204)

    async def service_logs(self, request: Request) -> Response:
        service = self.store.service(request.path_params["service"])
        try:
            lines = min(10_000, max(1, int(request.query_params.get("lines", "100"))))
        except ValueError:
            raise InvalidInput("lines must be a whole number") from None
        return answer({"service": service.id, "lines": self.platform.logs(service.id, lines)})

    # ---- endpoints ----

    async def endpoints(self, request: Request) -> Response:
        found = self.store.endpoints(self.store.deployment(request.path_params["deployment"]).id)
        return JSONResponse([endpoint_record(endpoint) for endpoint in found])

    async def set_endpoint(self, request: Request) -> Response:
        body: EndpointBody = parse(EndpointBody, await request.body())
        endpoint = await self.platform.set_endpoint(
            request.path_params["deployment"],
            request.path_params["name"],
            [Weighted(route.service, route.weight) for route in body.routes],
            body.shadow.service if body.shadow else None,
            body.shadow.percent if body.shadow else 0,
            if_match=request.headers.get("if-match"),
            if_none_match=request.headers.get("if-none-match"),
        )
        return JSONResponse(endpoint_record(endpoint), headers={"ETag": endpoint.etag})

    async def endpoint(self, request: Request) -> Response:
        endpoint = self.store.endpoint(request.path_params["endpoint"])
        return JSONResponse(endpoint_record(endpoint), headers={"ETag": endpoint.etag})

    async def delete_endpoint(self, request: Request) -> Response:
        await self.platform.delete_endpoint(request.path_params["endpoint"])
        return Response(status_code=204)

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(openapi.DOCUMENT)


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"the form needs a '{name}' text field")
    return value.strip()


def _environment(value: Any) -> dict[str, str]:
    if value is None or value == "":
        return {}
    try:
        found = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        found = None
    if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
        raise InvalidInput("'environment' must be a JSON object of strings")
    return found


def routes(api: ControlAPI) -> list[BaseRoute]:
    """The table: (path under the prefix, method, handler)."""
    table: list[tuple[str, str, Handler]] = [
        ("/openapi.json", "GET", api.openapi),
        ("/deployments", "GET", api.deployments),
        ("/deployments", "POST", api.create_deployment),
        ("/deployments/{deployment}", "GET", api.deployment),
        ("/deployments/{deployment}", "DELETE", api.delete_deployment),
        ("/deployments/{deployment}/versions", "GET", api.versions),
        ("/deployments/{deployment}/versions", "POST", api.create_version),
        ("/deployments/{deployment}/services", "GET", api.services),
        ("/deployments/{deployment}/services", "POST", api.create_service),
        ("/deployments/{deployment}/endpoints", "GET", api.endpoints),
        ("/deployments/{deployment}/endpoints/{name}", "PUT", api.set_endpoint),
        ("/versions/{version}", "GET", api.version),
        ("/versions/{version}", "DELETE", api.delete_version),
        ("/versions/{version}/archive", "GET", api.version_archive),
        ("/services/{service}", "GET", api.service),
        ("/services/{service}", "DELETE", api.delete_service),
        ("/services/{service}/scaling", "PUT", api.scale_service),
        ("/services/{service}/replicas", "GET", api.replicas),
        ("/services/{service}/start", "POST", api.start_service),
        ("/services/{service}/stop", "POST", api.stop_service),
        ("/services/{service}/logs", "GET", api.service_logs),
        ("/endpoints/{endpoint}", "GET", api.endpoint),
        ("/endpoints/{endpoint}", "DELETE", api.delete_endpoint),
    ]
    upload = BodyLimit(api.limits.max_size, "INFERD_MAX_BUNDLE_SIZE")
    return [
        SizedControlRoute(PREFIX + path, handler, methods=[method], body_limit=upload)
        if handler == api.create_version
        else (Route if method == "GET" else ControlRoute)(PREFIX + path, handler, methods=[method])
        for path, method, handler in table
    ]
