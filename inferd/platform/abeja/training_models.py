"""ABEJA's training models: ``abeja training create-training-model -f FILE`` (a zip, such as the
result ``download-training-result`` fetched), ``describe-``, ``update-``, ``download-``,
``archive-``/``unarchive-training-model``; and what ``abeja model create-service``, ``submit-run``
and ``create-trigger`` do with ``-m MODEL_ID`` (``models: {alias: id}``): the model unpacked into a
folder that is the service's or run's ``ABEJA_TRAINING_RESULT_DIR`` before its handler is imported,
ABEJA's "model version based on the result of training".

The upload goes through the same checks as every archive (`ArtifactStore.put_archive`) into
training's bundle store; the zip as uploaded is kept beside it for ``download-training-model``
(presigned, as ABEJA answered an S3 URL). A model's folder is unpacked once, under
``abeja-training/unpacked/<model id>``, and shared by the services and runs given that model.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response

from inferd.core.errors import InferdError, InvalidInput, NotFound
from inferd.platform.abeja import shapes
from inferd.platform.abeja.bodies import Body, Environment, _environment, parse
from inferd.platform.abeja.presign import Presigner
from inferd.platform.abeja.training import MAX_DESCRIPTION, TrainingAPI, archived_filter, kept
from inferd.platform.abeja.training_store import TrainingModel
from inferd.platform.artifacts import ArtifactStore

RESULT_DIR = "ABEJA_TRAINING_RESULT_DIR"


class ModelParameters(Body):
    description: str = Field("", max_length=MAX_DESCRIPTION)
    user_parameters: Environment = Field(default_factory=dict)
    training_job_id: str | None = None

    _check = field_validator("user_parameters")(_environment)


class ModelChange(Body):
    description: str | None = Field(None, max_length=MAX_DESCRIPTION)


def model_shape(model: TrainingModel) -> dict[str, Any]:
    return {
        "training_model_id": model.id,
        "job_definition_id": model.definition_id,
        "training_job_id": model.training_job_id,
        "user_parameters": model.user_parameters,
        "description": model.description,
        "archived": model.archived,
        "exec_env": "cloud",
        "created_at": shapes.time_text(model.created_at),
        "modified_at": shapes.time_text(model.modified_at),
    }


class TrainingModels:
    def __init__(self, api: TrainingAPI, artifacts: ArtifactStore, root: Path, presigner: Presigner) -> None:
        self.api, self.store, self.artifacts, self.presigner = api, api.store, artifacts, presigner
        self.files, self.unpacked = root / "models", root / "unpacked"
        self._lock = threading.Lock()

    def model_of(self, request: Request) -> TrainingModel:
        definition = self.api.definition(request)
        model = self.store.model(request.path_params["model"])
        if model.definition_id != definition.id:
            raise NotFound(f"training model {model.id} is not a model of {definition.name!r}")
        return model

    # ---- the routes ----

    async def create(self, request: Request) -> Response:
        definition = self.api.definition(request)
        if not request.headers.get("content-type", "").startswith("multipart/form-data"):
            raise InvalidInput(
                "a training model is a multipart/form-data upload of model_data and parameters"
            )
        try:
            form = await request.form(max_files=2, max_fields=2)
        except InferdError:
            raise
        except Exception as exc:  # the multipart parser's own errors: said as 400, not a 500
            raise InvalidInput(f"the multipart body cannot be read: {exc}") from None
        try:
            data, raw = form.get("model_data"), form.get("parameters")
            if not isinstance(data, UploadFile):
                raise InvalidInput("the upload has no model_data file (the model's zip)")
            text = await raw.read() if isinstance(raw, UploadFile) else (raw or "{}").encode()
            parameters: ModelParameters = parse(ModelParameters, text)
            if parameters.training_job_id is not None:
                job = self.store.job(parameters.training_job_id)
                if job.definition_id != definition.id:
                    raise NotFound(f"training job {job.id} is not a job of {definition.name!r}")
            bundle = await asyncio.to_thread(
                self.artifacts.put_archive, data.file, data.filename or "model.zip"
            )
            try:
                model = self.store.add_model(
                    definition.id,
                    parameters.training_job_id,
                    parameters.description,
                    dict(parameters.user_parameters),
                    bundle.digest,
                )
            finally:
                self.artifacts.release(bundle.digest)
            await asyncio.to_thread(self._keep, data.file, model.id)
        finally:
            await form.close()
        return JSONResponse(model_shape(model))

    def _keep(self, upload: Any, model_id: str) -> None:
        """The zip as uploaded (checked already), for its download; written whole or not at all."""
        self.files.mkdir(parents=True, exist_ok=True)
        upload.seek(0)
        descriptor, partial = tempfile.mkstemp(prefix=".tmp-", dir=self.files)
        try:
            with os.fdopen(descriptor, "wb") as file:
                shutil.copyfileobj(upload, file)
            os.replace(partial, self.files / f"{model_id}.zip")
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise

    async def list_models(self, request: Request) -> Response:
        definition = self.api.definition(request)
        wanted = archived_filter(request)
        entries = [model_shape(m) for m in self.store.models(definition.id) if kept(m.archived, wanted)]
        return JSONResponse({"entries": entries})

    async def model(self, request: Request) -> Response:
        return JSONResponse(model_shape(self.model_of(request)))

    async def update(self, request: Request) -> Response:
        body: ModelChange = parse(ModelChange, await request.body())
        model = self.model_of(request)
        if body.description is not None:
            model = self.store.update_model(replace(model, description=body.description))
        return JSONResponse(model_shape(model))

    async def archive(self, request: Request) -> Response:
        return self._archived(request, True)

    async def unarchive(self, request: Request) -> Response:
        return self._archived(request, False)

    def _archived(self, request: Request, archived: bool) -> Response:
        model = self.store.update_model(replace(self.model_of(request), archived=archived))
        return JSONResponse(model_shape(model))

    async def download(self, request: Request) -> Response:
        self.model_of(request)
        path = request.url.path.removesuffix("/download") + "/model.zip"
        return JSONResponse({"download_uri": self.presigner.url(request, "GET", path)})

    async def file(self, request: Request) -> Response:
        model = self.model_of(request)
        path = self.files / f"{model.id}.zip"
        if not path.is_file():
            raise NotFound(f"training model {model.id} has no file")
        return FileResponse(path, media_type="application/zip", filename=f"{model.id}.zip")

    def forget(self, model_ids: list[str]) -> None:
        """The zips of models whose records were deleted; their unpacked folders stay for the
        services and runs that were given them."""
        for model_id in model_ids:
            (self.files / f"{model_id}.zip").unlink(missing_ok=True)

    # ---- services and runs given ``models`` ----

    def environment(self, models: Mapping[str, str] | None) -> dict[str, str]:
        """``ABEJA_TRAINING_RESULT_DIR`` for a service or run given ``models`` (``{alias: id}``): the
        folder the model is unpacked in. Empty without models; NotFound for an unknown one;
        InvalidInput for more than one (one result folder)."""
        if not models:
            return {}
        if len(models) > 1:
            raise InvalidInput(
                f"models gives {len(models)} training models: inferd unpacks one (one result folder)"
            )
        (model_id,) = models.values()
        model = self.store.model(str(model_id))
        into = self.unpacked / model.id
        with self._lock:
            if not into.is_dir():
                self.artifacts.unpack(model.digest, into)
        return {RESULT_DIR: str(into)}
