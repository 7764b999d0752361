"""DEEPaaS training jobs (spec §7): ``POST …/train/`` starts ``train(**args)`` in a process of its own
and answers the new record at once; ``GET`` lists or reads records; ``DELETE`` cancels a running job
(it ends ``cancelled``) or removes a finished one. Records live in a SQLite file under the data
directory, so they survive a restart; jobs that were running when the server stopped show as errors.
"""

from __future__ import annotations

import functools
import logging
import multiprocessing
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from inferd.core.jobs import STOPPED, JobRecord, JobRunner, JobStatus, JobStore
from inferd.dialects.deepaas import responses, uploads
from inferd.dialects.deepaas.arguments import parse_or_answer
from inferd.dialects.deepaas.discovery import discover
from inferd.dialects.deepaas.model import DeepaasModel
from inferd.dialects.deepaas.settings import DeepaasSettings
from inferd.dialects.deepaas.stand_in import is_uploaded_file
from inferd.protocols.control import ControlRoute
from inferd.protocols.fallback import ANY_METHOD
from inferd.protocols.forms import UploadLimits

logger = logging.getLogger("inferd.deepaas")

STORE_FILE = "deepaas-jobs.sqlite3"

Handler = Callable[[Request], Awaitable[Response]]
JobHandler = Callable[[Request, "Jobs"], Awaitable[Response]]


class Jobs:
    """This process's store and runner; the store file is shared by every worker."""

    def __init__(self, settings: DeepaasSettings) -> None:
        self.store = JobStore(Path(settings.data_dir) / STORE_FILE)
        self.runner = JobRunner(self.store)
        self.settings = settings
        if multiprocessing.parent_process() is None:  # the only server process: no job can be running
            interrupted = self.store.interrupt_running(STOPPED)
            if interrupted:
                logger.warning("%d training jobs were running when the server stopped", interrupted)
        orphaned = self.store.interrupt_orphans()  # a worker, or model process, was lost
        if orphaned:
            logger.warning("%d training jobs were running in a server process that was lost", orphaned)


def date_text(moment: datetime) -> str:
    """``str(datetime)`` with the microseconds always written (upstream dropped them at 0)."""
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")


def record_document(record: JobRecord) -> dict[str, Any]:
    document: dict[str, Any] = {
        "date": date_text(record.date),
        "args": record.args,
        "uuid": record.uuid,
        "status": record.status.value,
    }
    if record.status is JobStatus.DONE and record.finish_date is not None:
        document["result"] = {
            "output": record.output,
            "finish_date": date_text(record.finish_date),
            "duration": str(record.finish_date - record.date),
        }
    elif record.message is not None:
        document["message"] = record.message
    return document


def shown_args(values: dict[str, Any]) -> dict[str, Any]:
    """Arguments as the record shows them: an uploaded file as [field, content type, file name]."""
    return {
        key: [value.name, value.content_type, value.original_filename] if is_uploaded_file(value) else value
        for key, value in values.items()
    }


def run_training(settings_fields: dict[str, Any], name: str, values: dict[str, Any]) -> Any:
    """In the job's process: load the model as the server does, warm it, and train."""
    settings = DeepaasSettings(**settings_fields)
    model = DeepaasModel(name, discover(settings)[name], settings.warm)
    model.load()
    return model.user.train(**values)


def routes(prefix: str, name: str, model: Callable[[str], Any], jobs: Jobs | None) -> list[BaseRoute]:
    """The train routes of one model; every method answers 402 when training is disabled."""

    def endpoint(
        methods: tuple[str, ...], handler: Callable[[Request, Jobs], Awaitable[Response]]
    ) -> Handler:
        async def answer(request: Request) -> Response:
            if jobs is None:
                return responses.text(402)
            if request.method not in methods:
                return responses.method_not_allowed(methods)
            return await handler(request, jobs)

        return answer

    async def collection(request: Request, jobs: Jobs) -> Response:
        if request.method == "GET":
            return responses.json([record_document(r) for r in jobs.store.list(name)])
        found = model(name)
        if not found.has("train"):
            return responses.text(501)
        parsed = await parse_or_answer(request, found.train_args, UploadLimits.of(jobs.settings))
        if isinstance(parsed, Response):
            return parsed
        record = jobs.store.create(name, _jsonable(shown_args(parsed.values)))
        target = functools.partial(run_training, jobs.settings.model_dump(), name, parsed.values)
        try:
            jobs.runner.start(record, target, cleanup=[Path(path) for path in parsed.temp_files])
        except Exception:
            uploads.remove(parsed.temp_files)
            jobs.store.fail(record.uuid, "the training process could not be started")
            raise
        return responses.json(record_document(record))

    async def one(request: Request, jobs: Jobs) -> Response:
        uuid = request.path_params["uuid"]
        record = jobs.store.get(name, uuid)
        if record is None:
            return responses.text(404)
        if request.method == "DELETE":
            if record.status is JobStatus.RUNNING:
                if not jobs.runner.cancel(uuid):  # running in another worker, or no longer at all
                    jobs.store.cancel(uuid)
                record = jobs.store.get(name, uuid) or record
            jobs.store.delete(uuid)
        return responses.json(record_document(record))

    return [
        ControlRoute(f"{prefix}/train/", endpoint(("GET", "POST"), collection), methods=ANY_METHOD),
        ControlRoute(f"{prefix}/train/{{uuid}}", endpoint(("GET", "DELETE"), one), methods=ANY_METHOD),
    ]


def _jsonable(values: dict[str, Any]) -> dict[str, Any]:
    """Arguments a JSON column can hold; anything else is recorded as its text."""
    return {key: value if _is_json(value) else str(value) for key, value in values.items()}


def _is_json(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True
