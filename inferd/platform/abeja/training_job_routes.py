"""ABEJA training's jobs over the routes ``abeja training create-job``, ``describe-jobs``,
``stop-job``, ``archive-job``/``unarchive-job``, ``download-training-result`` and the SDK's
``abeja.train.Client().update_statistics`` call, onto `TrainingJobs`.

A job's answer is ABEJA's shape (``training_job_id``, ``status``, ``start_time``, ``completion_time``,
``statistics``...) with ``status_message`` saying why it failed or stopped. ``statistics`` is the
last one reported; ``GET .../jobs/{j}/statistics`` answers their history too. The result (the zip
of its ``ABEJA_TRAINING_RESULT_DIR``) is fetched through a presigned ``artifacts.complete.uri``, as
ABEJA answered an S3 URL, since the CLI fetches it without credentials.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pydantic import Field, field_validator
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response

from inferd.core.errors import Conflict, InvalidInput, NotFound
from inferd.platform.abeja import shapes
from inferd.platform.abeja.bodies import Body, Environment, _environment, parse
from inferd.platform.abeja.presign import Presigner
from inferd.platform.abeja.training import MAX_DESCRIPTION, TrainingAPI, archived_filter, kept, number
from inferd.platform.abeja.training_jobs import TrainingJobs
from inferd.platform.abeja.training_store import COMPLETE, PENDING, TrainingJob

DEFAULT_INSTANCE_TYPE = "cpu-1"
#: Lines ``.../jobs/{j}/logs`` answers, newest last; statistics' bytes a report may carry.
LOG_LINES, MAX_STATISTICS = 1000, 64 * 1024


class NewJob(Body):
    environment: Environment = Field(default_factory=dict)
    #: ABEJA's deprecated name of ``environment``.
    user_parameters: Environment = Field(default_factory=dict)
    instance_type: str = Field(DEFAULT_INSTANCE_TYPE, min_length=1, max_length=64)
    datasets: dict[str, str] = Field(default_factory=dict)
    description: str | None = Field(None, max_length=MAX_DESCRIPTION)
    export_log: bool = False

    _check = field_validator("environment", "user_parameters")(_environment)


class StatisticsReport(Body):
    statistics: dict[str, Any]


def job_shape(job: TrainingJob) -> dict[str, Any]:
    return {
        "training_job_id": job.id,
        "id": job.id,
        "job_definition_id": job.definition_id,
        "job_definition_version": job.version,
        "status": job.status,
        "status_message": job.reason or None,
        "description": job.description,
        "instance_type": job.instance_type,
        "environment": job.environment,
        "user_parameters": {},
        "datasets": job.datasets,
        "exec_env": "cloud",
        "export_log": job.export_log,
        "archived": job.archived,
        "statistics": job.statistics,
        "creator": None,
        "start_time": _time(job.start_time),
        "completion_time": _time(job.completion_time),
        "created_at": shapes.time_text(job.created_at),
        "modified_at": shapes.time_text(job.modified_at),
    }


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else shapes.time_text(moment)


class TrainingJobRoutes:
    def __init__(self, api: TrainingAPI, jobs: TrainingJobs, presigner: Presigner) -> None:
        self.api, self.store, self.jobs, self.presigner = api, api.store, jobs, presigner

    def job_of(self, request: Request) -> TrainingJob:
        definition = self.api.definition(request)
        job = self.store.job(request.path_params["job"])
        if job.definition_id != definition.id:
            raise NotFound(f"training job {job.id} is not a job of {definition.name!r}")
        return job

    async def create_job(self, request: Request) -> Response:
        definition, version = self.api.version_of(request)
        body: NewJob = parse(NewJob, await request.body())
        if definition.archived or version.archived:
            raise Conflict(f"{definition.name}:{version.number} is archived: unarchive it to run jobs")
        organization = request.path_params["organization"]
        moment = datetime.now(timezone.utc)
        job = TrainingJob(
            id="",
            definition_id=definition.id,
            version=version.number,
            status=PENDING,
            reason="",
            description=body.description,
            instance_type=body.instance_type,
            environment={**body.user_parameters, **body.environment},
            datasets=dict(body.datasets),
            export_log=body.export_log,
            archived=False,
            statistics=None,
            created_at=moment,
            modified_at=moment,
            api_url=f"{str(request.base_url).rstrip('/')}/organizations/{organization}",
        )
        return JSONResponse(job_shape(self.jobs.submit(job)))

    async def list_jobs(self, request: Request) -> Response:
        definition = self.api.definition(request)
        wanted = archived_filter(request)
        limit, offset = number(request, "limit", 10, 1, 1000), number(request, "offset", 0, 0, None)
        found = [j for j in reversed(self.store.jobs(definition.id)) if kept(j.archived, wanted)]
        entries = [job_shape(j) for j in found[offset : offset + limit]]
        return JSONResponse({"entries": entries, "limit": limit, "offset": offset, "total": len(found)})

    async def job(self, request: Request) -> Response:
        return JSONResponse(job_shape(self.job_of(request)))

    async def stop(self, request: Request) -> Response:
        job = await self.jobs.stop(self.job_of(request).id)
        definition = self.api.definition(request)
        return JSONResponse({"message": f"{definition.name}:{job.id} stopped", "status": job.status})

    async def archive(self, request: Request) -> Response:
        return self._archived(request, True)

    async def unarchive(self, request: Request) -> Response:
        return self._archived(request, False)

    def _archived(self, request: Request, archived: bool) -> Response:
        job = self.job_of(request)
        self.store.set_job_archived(job.id, archived)
        word = "archived" if archived else "unarchived"
        return JSONResponse({"message": f"{job.id} {word}"})

    async def logs(self, request: Request) -> Response:
        """The job's last lines, oldest first, as ABEJA's log ``events`` (one page)."""
        job = self.job_of(request)
        events = [shapes.log_event(line) for line in self.jobs.log(job.id).tail(LOG_LINES)]
        return JSONResponse({"events": events, "next_backward_token": None, "next_forward_token": None})

    async def report_statistics(self, request: Request) -> Response:
        raw = await request.body()
        if len(raw) > MAX_STATISTICS:
            raise InvalidInput(f"statistics must be at most {MAX_STATISTICS} bytes")
        body: StatisticsReport = parse(StatisticsReport, raw)
        job = self.job_of(request)
        self.store.add_statistics(job.id, body.statistics)
        return JSONResponse({"statistics": body.statistics})

    async def statistics(self, request: Request) -> Response:
        job = self.store.job(self.job_of(request).id, with_history=True)
        return JSONResponse({"statistics": job.statistics, "history": job.history})

    async def result(self, request: Request) -> Response:
        job = self.job_of(request)
        if job.status != COMPLETE or not self.jobs.result(job.id).is_file():
            raise NotFound(f"training job {job.id} has no result: it is {job.status}")
        path = request.url.path.removesuffix("/result") + "/result.zip"
        uri = self.presigner.url(request, "GET", path)
        return JSONResponse({"artifacts": {"complete": {"uri": uri}}})

    async def result_file(self, request: Request) -> Response:
        job = self.job_of(request)
        path = self.jobs.result(job.id)
        if not path.is_file():
            raise NotFound(f"training job {job.id} has no result")
        return FileResponse(path, media_type="application/zip", filename=f"{job.id}.zip")
