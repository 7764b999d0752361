"""ABEJA training's job definitions and their versions, over the routes ``abeja training ...``
(abejacli) and the SDK's ``abeja.training`` call under ``/organizations/{o}/training/definitions``.

A definition is named (inferd's name rule) and has a 13-digit id like ABEJA's; either names it in a
path. A version is numbered from 1 in its definition and arrives in one multipart ``POST``: the
project's archive (``source_code``: tar.gz, tar or zip) and its ``parameters`` (JSON: ``handler``,
``image``, ``environment``, ``datasets``, ``description``). The archive goes through the same checks
as a model version's (`inferd.platform.artifacts`: links, paths leaving the folder, device files,
header and size caps) into a bundle store of training's own, so deleting a model version never
removes a training version's bundle nor the other way round. Jobs are `TrainingJobRoutes`'.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pydantic import Field, field_validator
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from inferd.core.errors import Conflict, InferdError, InvalidInput
from inferd.core.names import NAME_PATTERN, RULE
from inferd.platform.abeja import shapes
from inferd.platform.abeja.bodies import HANDLER, Body, Environment, _environment, parse
from inferd.platform.abeja.training_store import FINAL, Definition, TrainingStore, TrainingVersion
from inferd.platform.artifacts import ArtifactStore

DEFAULT_TRAINING_HANDLER = "train:handler"
DEFAULT_TRAINING_IMAGE = "abeja-inc/all-cpu:19.10"
ARCHIVED_FILTERS = ("exclude_archived", "include_archived", "only_archived")
#: Most characters of a description (ABEJA's CLI says 256).
MAX_DESCRIPTION = 256


class NewDefinition(Body):
    name: str


class VersionParameters(Body):
    handler: str = DEFAULT_TRAINING_HANDLER
    image: str = Field(DEFAULT_TRAINING_IMAGE, min_length=1, max_length=256)
    environment: Environment = Field(default_factory=dict)
    datasets: dict[str, str] = Field(default_factory=dict)
    description: str = Field("", max_length=MAX_DESCRIPTION)

    _check = field_validator("environment")(_environment)

    @field_validator("handler")
    @classmethod
    def _handler(cls, value: str) -> str:
        if not HANDLER.fullmatch(value):
            raise ValueError(f"handler {value!r} must be file:function, e.g. {DEFAULT_TRAINING_HANDLER}")
        return value


class VersionChange(Body):
    description: str | None = Field(None, max_length=MAX_DESCRIPTION)


def archived_filter(request: Request) -> str:
    wanted = request.query_params.get("filter_archived", "exclude_archived")
    if wanted not in ARCHIVED_FILTERS:
        raise InvalidInput(f"filter_archived {wanted!r} is not one of {', '.join(ARCHIVED_FILTERS)}")
    return wanted


def kept(archived: bool, wanted: str) -> bool:
    return wanted == "include_archived" or archived == (wanted == "only_archived")


def number(request: Request, name: str, default: int, low: int, high: int | None) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or int(raw) < low or (high is not None and int(raw) > high):
        upper = f" to {high}" if high is not None else " or more"
        raise InvalidInput(f"{name} {raw!r} must be a whole number from {low}{upper}")
    return int(raw)


def version_shape(version: TrainingVersion) -> dict[str, Any]:
    return {
        "job_definition_id": version.definition_id,
        "job_definition_version": version.number,
        "handler": version.handler,
        "image": version.image,
        "environment": version.environment,
        "user_parameters": {},
        "datasets": version.datasets,
        "description": version.description,
        "archived": version.archived,
        "created_at": shapes.time_text(version.created_at),
        "modified_at": shapes.time_text(version.modified_at),
    }


class TrainingAPI:
    """Definitions and versions over ``store``; versions' bundles in ``artifacts``."""

    def __init__(self, store: TrainingStore, artifacts: ArtifactStore) -> None:
        self.store, self.artifacts = store, artifacts
        #: Removes the logs and results of deleted jobs (`TrainingJobs.forget`).
        self.forget_jobs: Callable[[list[str]], None] = lambda job_ids: None
        #: Removes the files of deleted training models (`TrainingModels.forget`).
        self.forget_models: Callable[[list[str]], None] = lambda model_ids: None

    def definition(self, request: Request) -> Definition:
        return self.store.definition(request.path_params["definition"])

    def version_of(self, request: Request) -> tuple[Definition, TrainingVersion]:
        definition = self.definition(request)
        return definition, self.store.version(definition.id, _version_number(request.path_params["version"]))

    def _definition(self, request: Request, definition: Definition) -> dict[str, Any]:
        versions = [version_shape(v) for v in self.store.versions(definition.id)]
        return {
            "job_definition_id": definition.id,
            "name": definition.name,
            "organization_id": request.path_params["organization"],
            "archived": definition.archived,
            "version_count": len(versions),
            "versions": versions,
            "model_count": 0,
            "created_at": shapes.time_text(definition.created_at),
            "modified_at": shapes.time_text(definition.modified_at),
        }

    # ---- definitions ----

    async def create_definition(self, request: Request) -> Response:
        body: NewDefinition = parse(NewDefinition, await request.body())
        if not NAME_PATTERN.fullmatch(body.name) or body.name.isdigit():
            raise InvalidInput(
                f"job definition name {body.name!r} cannot be used: use {RULE}, not only digits"
            )
        return JSONResponse(self._definition(request, self.store.add_definition(body.name)))

    async def definitions(self, request: Request) -> Response:
        wanted = archived_filter(request)
        limit, offset = number(request, "limit", 1000, 1, 1000), number(request, "offset", 0, 0, None)
        found = [d for d in self.store.definitions() if kept(d.archived, wanted)]
        entries = [self._definition(request, d) for d in found[offset : offset + limit]]
        return JSONResponse({"entries": entries, "limit": limit, "offset": offset, "total": len(found)})

    async def definition_record(self, request: Request) -> Response:
        return JSONResponse(self._definition(request, self.definition(request)))

    async def delete_definition(self, request: Request) -> Response:
        definition = self.definition(request)
        if any(job.status not in FINAL for job in self.store.jobs(definition.id)):
            raise Conflict(
                f"job definition {definition.name!r} has jobs that have not finished: stop them first"
            )
        digests = {v.digest for v in self.store.versions(definition.id)}
        digests |= {m.digest for m in self.store.models(definition.id)}
        jobs = [job.id for job in self.store.jobs(definition.id)]
        models = [model.id for model in self.store.models(definition.id)]
        self.store.delete_definition(definition.id)
        self._discard(digests)
        self.forget_jobs(jobs)
        self.forget_models(models)
        return JSONResponse({"message": f"{definition.name} deleted"})

    async def archive_definition(self, request: Request) -> Response:
        return self._definition_archived(request, True)

    async def unarchive_definition(self, request: Request) -> Response:
        return self._definition_archived(request, False)

    def _definition_archived(self, request: Request, archived: bool) -> Response:
        definition = self.definition(request)
        self.store.set_definition_archived(definition.id, archived)
        word = "archived" if archived else "unarchived"
        return JSONResponse({"message": f"{definition.name} {word}"})

    # ---- versions ----

    async def create_version(self, request: Request) -> Response:
        """The multipart upload: ``source_code`` (the archive) and ``parameters`` (JSON)."""
        definition = self.definition(request)
        if not request.headers.get("content-type", "").startswith("multipart/form-data"):
            raise InvalidInput("a version is a multipart/form-data upload of source_code and parameters")
        try:
            form = await request.form(max_files=2, max_fields=2)
        except InferdError:  # the body limit's PayloadTooLarge among them
            raise
        except Exception as exc:  # the multipart parser's own errors: said as 400, not a 500
            raise InvalidInput(f"the multipart body cannot be read: {exc}") from None
        try:
            source, raw = form.get("source_code"), form.get("parameters")
            if not isinstance(source, UploadFile):
                raise InvalidInput("the upload has no source_code file (the project's tar.gz or zip)")
            text = await raw.read() if isinstance(raw, UploadFile) else (raw or "{}").encode()
            parameters: VersionParameters = parse(VersionParameters, text)
            bundle = await asyncio.to_thread(
                self.artifacts.put_archive, source.file, source.filename or "archive.tar.gz"
            )
        finally:
            await form.close()
        try:
            version = self.store.add_version(
                definition.id,
                parameters.handler,
                parameters.image,
                dict(parameters.environment),
                dict(parameters.datasets),
                parameters.description,
                bundle.digest,
            )
        finally:
            self.artifacts.release(bundle.digest)
        return JSONResponse(version_shape(version))

    async def versions(self, request: Request) -> Response:
        definition = self.definition(request)
        wanted = archived_filter(request)
        entries = [version_shape(v) for v in self.store.versions(definition.id) if kept(v.archived, wanted)]
        return JSONResponse({"entries": entries})

    async def version(self, request: Request) -> Response:
        return JSONResponse(version_shape(self.version_of(request)[1]))

    async def update_version(self, request: Request) -> Response:
        body: VersionChange = parse(VersionChange, await request.body())
        version = self.version_of(request)[1]
        if body.description is not None:
            version = self.store.update_version(replace(version, description=body.description))
        return JSONResponse(version_shape(version))

    async def archive_version(self, request: Request) -> Response:
        return self._version_archived(request, True)

    async def unarchive_version(self, request: Request) -> Response:
        return self._version_archived(request, False)

    def _version_archived(self, request: Request, archived: bool) -> Response:
        definition, version = self.version_of(request)
        self.store.update_version(replace(version, archived=archived))
        word = "archived" if archived else "unarchived"
        return JSONResponse({"message": f"{definition.name}:{version.number} {word}"})

    async def delete_version(self, request: Request) -> Response:
        definition, version = self.version_of(request)
        if any(j.version == version.number for j in self.store.jobs(definition.id)):
            raise Conflict(f"version {version.number} of {definition.name!r} has jobs: archive it instead")
        self.store.delete_version(definition.id, version.number)
        self._discard({version.digest})
        return JSONResponse({"message": f"{definition.name}:{version.number} deleted"})

    async def from_git(self, request: Request) -> Response:
        return JSONResponse(
            shapes.error(501, "inferd does not build ABEJA training versions from git: use create-version"),
            status_code=501,
        )

    def _discard(self, digests: set[str]) -> None:
        for digest in digests:
            self.artifacts.discard(digest, self.store.names_bundle)


def _version_number(raw: str) -> int:
    if not raw.isdigit() or len(raw) > 9:
        raise InvalidInput(f"job definition version {raw!r} must be its number (1, 2...)")
    return int(raw)
