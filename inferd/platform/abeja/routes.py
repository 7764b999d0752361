"""The ABEJA-compatible API: the routes under ``/organizations/{organization}/deployments`` that
``abeja model ...`` (abejacli) and ABEJA's SDK call, each translated onto one `Platform` operation, and
the data path under ``/deployments/...`` that ``check-endpoint-json`` and ``check-endpoint-image`` post
to. Any organization id is accepted and echoed: one control process is one organization.

A version arrives in two calls, as on ABEJA: ``POST .../versions`` answers the version's id and a
presigned ``upload_url`` (kept pending in memory, nothing stored), and the ``PUT`` of the archive to it
stores the bundle and the version under that id. Runs and triggers are `AbejaRuns`'; the DataLake's
channels (under the organization) and files (under ``/channels``) are `DatalakeChannels`'; datasets
and their items `DatasetsAPI`'s.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import wraps
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response

from inferd.core.errors import Conflict, InferdError, InvalidInput, NotFound, PayloadTooLarge
from inferd.core.names import NAME_PATTERN, RULE
from inferd.platform.abeja import shapes
from inferd.platform.abeja.bodies import (
    EndpointChange,
    NewDeployment,
    NewEndpoint,
    NewService,
    NewVersion,
    parse,
)
from inferd.platform.abeja.extras import Extras, ServiceExtras, VersionExtras
from inferd.platform.abeja.forward import Forwarder
from inferd.platform.abeja.presign import LIFETIME_SECONDS, Presigner
from inferd.platform.datapath import GatewayPath
from inferd.platform.manager import Platform
from inferd.platform.records import Deployment, Endpoint, Service, new_id, of_deployment
from inferd.platform.records import Route as Weighted
from inferd.platform.settings import PlatformSettings
from inferd.protocols.status import error_message, status_of

PREFIX = "/organizations/{organization}"
Handler = Callable[[Request], Awaitable[Response]]
ModelsEnvironment = Callable[[Mapping[str, str] | None], dict[str, str]]
#: How many of a service's last log lines ``describe-service-logs`` answers.
LOG_LINES = 1000
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Pending:
    """A version answered but whose archive has not arrived yet."""

    deployment_id: str
    label: str
    extras: VersionExtras
    #: When its upload URL stops working (`time.time`); it is forgotten after that.
    expires: float


def first_token(settings: PlatformSettings) -> str | None:
    return settings.auth_tokens[0].get_secret_value() if settings.auth_tokens else None


def abeja_errors(handler: Handler) -> Handler:
    """Errors in ABEJA's body: ``{"error": "not_found", "error_description": "..."}``."""

    @wraps(handler)
    async def answering(request: Request) -> Response:
        try:
            return await handler(request)
        except InferdError as exc:
            status = status_of(exc).http
            return JSONResponse(shapes.error(status, error_message(exc)), status_code=status)

    return answering


class AbejaAPI:
    def __init__(self, platform: Platform, settings: PlatformSettings) -> None:
        self.platform, self.store = platform, platform.store
        self.extras = Extras(platform.store.path)
        # keyed like `AbejaCredentials`, which checks the URLs: by the control API's first token
        self.presigner = Presigner(next(iter(settings.control_tokens()), None))
        table = platform.path.table if isinstance(platform.path, GatewayPath) else None
        self.forwarder = Forwarder(table, platform.pick_upstream, platform.routing.token_at)
        self.max_upload = settings.max_bundle_size
        self.max_inference_body = settings.max_body_size
        self.pending: dict[str, Pending] = {}
        #: ``models`` (``-m``) → the environment that gives a service its training model
        #: (`inferd.platform.abeja.training_models`); none until training is set up.
        self.training_models: ModelsEnvironment = lambda models: {}

    # ---- lookups ----

    def deployment(self, request: Request) -> Deployment:
        return self.store.deployment(request.path_params["deployment"])

    def service_of(self, request: Request) -> tuple[Deployment, Service]:
        deployment = self.deployment(request)
        return deployment, of_deployment(self.store.service(request.path_params["service"]), deployment)

    def endpoint_of(self, request: Request) -> tuple[Deployment, Endpoint]:
        deployment = self.deployment(request)
        wanted = request.path_params["endpoint"]
        for endpoint in self.store.endpoints(deployment.id):
            if wanted in (endpoint.id, _alias(deployment, endpoint)):
                return deployment, endpoint
        raise NotFound(f"endpoint {wanted!r} does not exist in deployment {deployment.name!r}")

    def _service(self, service: Service) -> dict[str, Any]:
        label = self.store.version(service.version_id).label
        return shapes.service(service, label, self.extras.service(service.id))

    def _deployment(self, deployment: Deployment) -> dict[str, Any]:
        services = [self._service(service) for service in self.store.services(deployment.id)]
        return shapes.deployment(deployment, self.extras.default_environment(deployment.id), services)

    # ---- organization and deployments ----

    async def organization(self, request: Request) -> Response:
        organization = request.path_params["organization"]
        return JSONResponse({"id": organization, "organization_id": organization, "name": organization})

    async def deployments(self, request: Request) -> Response:
        return JSONResponse({"entries": [self._deployment(d) for d in self.store.deployments()]})

    async def create_deployment(self, request: Request) -> Response:
        body: NewDeployment = parse(NewDeployment, await request.body())
        deployment = self.platform.create_deployment(body.name, body.description or "")
        if body.default_environment:
            self.extras.set_default_environment(deployment.id, body.default_environment)
        return JSONResponse(self._deployment(deployment))

    async def deployment_record(self, request: Request) -> Response:
        return JSONResponse(self._deployment(self.deployment(request)))

    async def delete_deployment(self, request: Request) -> Response:
        deployment = self.deployment(request)
        self.platform.delete_deployment(deployment.id)
        for version_id, pending in list(self.pending.items()):
            if pending.deployment_id == deployment.id:
                self.pending.pop(version_id, None)
        return JSONResponse({"message": f"{deployment.id} deleted"})

    # ---- versions ----

    async def versions(self, request: Request) -> Response:
        deployment = self.deployment(request)
        entries = [shapes.version(v, self.extras.version(v.id)) for v in self.store.versions(deployment.id)]
        return JSONResponse({"entries": entries})

    async def create_version(self, request: Request) -> Response:
        """Answer the version with its ``upload_url``; the version is stored when its archive is put."""
        deployment = self.deployment(request)
        body: NewVersion = parse(NewVersion, await request.body())
        self._forget_expired()
        taken = {v.label for v in self.store.versions(deployment.id)} | {
            p.label for p in self.pending.values() if p.deployment_id == deployment.id
        }
        if body.version in taken:
            raise Conflict(f"deployment {deployment.name!r} has a version {body.version!r} already")
        version_id = new_id("version")
        extras = VersionExtras(body.image, body.handler, dict(body.user_parameters))
        self.pending[version_id] = Pending(
            deployment.id, body.version, extras, time.time() + LIFETIME_SECONDS
        )
        path = request.url.path.rstrip("/") + f"/{version_id}/source"
        upload_url = self.presigner.url(request, "PUT", path)
        return JSONResponse(
            {
                "deployment_id": deployment.id,
                "version": body.version,
                "version_id": version_id,
                "handler": extras.handler,
                "image": extras.image,
                "user_parameters": extras.user_parameters,
                "upload_url": upload_url,
            }
        )

    def _forget_expired(self) -> None:
        now = time.time()
        for version_id, pending in list(self.pending.items()):
            if pending.expires < now:
                self.pending.pop(version_id, None)

    async def upload(self, request: Request) -> Response:
        """The archive (tar, tar.gz or zip) of a pending version, as the raw body of a ``PUT``."""
        deployment = self.deployment(request)
        version_id = request.path_params["version"]
        pending = self.pending.pop(version_id, None)
        if pending is None or pending.deployment_id != deployment.id:
            if pending is not None:
                self.pending[version_id] = pending
            self.store.version(version_id)  # NotFound unless it is stored
            raise Conflict(f"version {version_id} has its archive already; versions are immutable")
        try:
            with tempfile.SpooledTemporaryFile(_CHUNK) as archive:
                await self._receive(request, archive)
                environment = {
                    **pending.extras.user_parameters,
                    "HANDLER": pending.extras.handler,
                    "ABEJA_DEPLOYMENT_ID": deployment.id,
                    "ABEJA_MODEL_VERSION": pending.label,
                    "ABEJA_MODEL_VERSION_ID": version_id,
                }
                version = await asyncio.to_thread(
                    self.platform.add_version,
                    deployment.id,
                    pending.label,
                    archive,  # type: ignore[arg-type]  # a binary file, spooled
                    pending.extras.handler,
                    "abeja",
                    environment,
                    version_id,
                )
        except BaseException:
            self.pending[version_id] = pending  # the client may put a good archive again
            raise
        self.extras.set_version(version.id, pending.extras)
        return JSONResponse({"message": f"{version.id} uploaded", "version_id": version.id})

    async def _receive(self, request: Request, archive: Any) -> None:
        received = 0
        async for chunk in request.stream():
            received += len(chunk)
            if received > self.max_upload:
                raise PayloadTooLarge(f"the archive is larger than {self.max_upload} bytes")
            archive.write(chunk)
        if not received:
            raise InvalidInput("the archive is empty: PUT the tar.gz or zip of the project")
        archive.seek(0)

    async def version(self, request: Request) -> Response:
        deployment = self.deployment(request)
        version_id = request.path_params["version"]
        pending = self.pending.get(version_id)
        if pending is not None and pending.deployment_id == deployment.id:
            raise NotFound(f"version {version_id} waits for its archive (PUT it to its upload_url)")
        version = of_deployment(self.store.version(version_id), deployment)
        return JSONResponse(shapes.version(version, self.extras.version(version.id)))

    async def delete_version(self, request: Request) -> Response:
        deployment = self.deployment(request)
        version_id = request.path_params["version"]
        pending = self.pending.get(version_id)
        if pending is not None and pending.deployment_id == deployment.id:
            self.pending.pop(version_id, None)
        else:
            version = of_deployment(self.store.version(version_id), deployment)
            self.platform.delete_version(version.id)
        return JSONResponse({"message": f"{version_id} deleted"})

    async def download(self, request: Request) -> Response:
        """Where to fetch the version's archive: a presigned URL, as ABEJA answered an S3 one."""
        await self.version(request)  # NotFound as for a read
        path = request.url.path.removesuffix("/download") + "/source.tar.gz"
        return JSONResponse({"download_uri": self.presigner.url(request, "GET", path)})

    async def archive(self, request: Request) -> Response:
        deployment = self.deployment(request)
        version = of_deployment(self.store.version(request.path_params["version"]), deployment)
        path = self.platform.artifacts.open(version.digest)
        return FileResponse(path, media_type="application/gzip", filename=f"{version.id}.tar.gz")

    # ---- services ----

    async def services(self, request: Request) -> Response:
        deployment = self.deployment(request)
        return JSONResponse({"entries": [self._service(s) for s in self.store.services(deployment.id)]})

    async def create_service(self, request: Request) -> Response:
        deployment = self.deployment(request)
        body: NewService = parse(NewService, await request.body())
        version = of_deployment(self.store.version(body.version_id), deployment)
        environment = {
            **self.extras.default_environment(deployment.id),
            "SERVICE_TYPE": "HTTP",
            "ABEJA_ORGANIZATION_ID": request.path_params["organization"],
            **body.environment,
            **await asyncio.to_thread(self.training_models, body.models),
        }
        service = await self.platform.create_service(
            deployment.id, version.id, 1, environment, scaling=body.scaling()
        )
        extras = ServiceExtras(
            body.instance_type, body.instance_number, body.enable_autoscale, dict(body.environment)
        )
        self.extras.set_service(service.id, extras)
        return JSONResponse(self._service(service))

    async def service(self, request: Request) -> Response:
        return JSONResponse(self._service(self.service_of(request)[1]))

    async def start_service(self, request: Request) -> Response:
        service = await self.platform.start_service(self.service_of(request)[1].id)
        return JSONResponse({"message": f"{service.id} started"})

    async def stop_service(self, request: Request) -> Response:
        service = await self.platform.stop_service(self.service_of(request)[1].id)
        return JSONResponse({"message": f"{service.id} stopped"})

    async def delete_service(self, request: Request) -> Response:
        service = self.service_of(request)[1]
        await self.platform.delete_service(service.id)
        return JSONResponse({"message": f"{service.id} deleted"})

    async def service_logs(self, request: Request) -> Response:
        """The service's last lines, newest first, as ABEJA's ``events`` (one page: no tokens)."""
        service = self.service_of(request)[1]
        lines = self.platform.logs(service.id, LOG_LINES)
        events = [shapes.log_event(line) for line in reversed(lines)]
        return JSONResponse({"events": events, "next_backward_token": None, "next_forward_token": None})

    # ---- endpoints ----

    async def endpoints(self, request: Request) -> Response:
        deployment = self.deployment(request)
        entries = [shapes.endpoint(e, _alias(deployment, e)) for e in self.store.endpoints(deployment.id)]
        return JSONResponse({"entries": entries})

    async def create_endpoint(self, request: Request) -> Response:
        deployment = self.deployment(request)
        body: NewEndpoint = parse(NewEndpoint, await request.body())
        if not NAME_PATTERN.fullmatch(body.custom_alias):
            raise InvalidInput(f"custom_alias {body.custom_alias!r} cannot be used: use {RULE}")
        name = f"{deployment.name}.{body.custom_alias}"
        if any(endpoint.name == name for endpoint in self.store.endpoints()):
            raise Conflict(f"deployment {deployment.name!r} has an endpoint {body.custom_alias!r} already")
        service = self._own_service(deployment, body.service_id)
        endpoint = await self.platform.set_endpoint(deployment.id, name, [Weighted(service.id, 100)])
        return JSONResponse(shapes.endpoint(endpoint, body.custom_alias))

    async def endpoint(self, request: Request) -> Response:
        deployment, endpoint = self.endpoint_of(request)
        return JSONResponse(shapes.endpoint(endpoint, _alias(deployment, endpoint)))

    async def update_endpoint(self, request: Request) -> Response:
        """Point the endpoint at another service; the old one finishes what it holds first."""
        deployment, endpoint = self.endpoint_of(request)
        body: EndpointChange = parse(EndpointChange, await request.body())
        service = self._own_service(deployment, body.service_id)
        await self.platform.set_endpoint(deployment.id, endpoint.name, [Weighted(service.id, 100)])
        return JSONResponse({"message": f"{endpoint.id} updated"})

    async def delete_endpoint(self, request: Request) -> Response:
        endpoint = self.endpoint_of(request)[1]
        await self.platform.delete_endpoint(endpoint.id)
        return JSONResponse({"message": f"{endpoint.id} deleted"})

    def _own_service(self, deployment: Deployment, service_id: str) -> Service:
        return of_deployment(self.store.service(service_id), deployment)

    # ---- not built yet ----

    async def not_built(self, request: Request) -> Response:
        what = request.url.path.split("/")[5]
        return JSONResponse(
            shapes.error(
                501,
                f"inferd does not serve ABEJA {what} yet: push the project as a version instead",
            ),
            status_code=501,
        )

    # ---- the data path ----

    async def call_deployment(self, request: Request) -> Response:
        """A request to the deployment: its ``default`` endpoint, or its only one."""
        deployment = self.deployment(request)
        endpoints = self.store.endpoints(deployment.id)
        chosen = [e for e in endpoints if _alias(deployment, e) == "default"] or (
            endpoints if len(endpoints) == 1 else []
        )
        if not chosen:
            raise NotFound(f"deployment {deployment.name!r} has no 'default' endpoint: create-endpoint first")
        return await self.forwarder.to_endpoint(request, chosen[0].name)

    async def call_service(self, request: Request) -> Response:
        service = self.service_of(request)[1]
        if service.port is None or service.state.value != "running":
            raise Conflict(f"service {service.id} is {service.state.value}, not running")
        return await self.forwarder.to_upstream(request, f"127.0.0.1:{service.port}")


def _alias(deployment: Deployment, endpoint: Endpoint) -> str:
    """The custom alias of an endpoint named ``<deployment>.<alias>`` (one made by this API), else
    its name."""
    return endpoint.name.removeprefix(f"{deployment.name}.")
