"""What the console's training pages read, as read-only JSON of the control API
(``/platform/v1/training...``): every job definition with its versions, its newest jobs (status,
times, reason, last statistics) and its training models in one answer, and one job's statistics
history (what its curves are drawn from).

They live beside the ABEJA routes because they read the same `TrainingStore`; they are control API
routes (bearer token or the console's sign-in cookie, `BearerAuth`), not ABEJA routes: a training
job's own token (`JobTokens`) is taken on ABEJA paths only, so it reads none of this. Nothing here
changes state (plain ``GET`` routes).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from inferd.platform.abeja.training_store import TrainingJob, TrainingModel, TrainingStore, TrainingVersion
from inferd.protocols.json import JSONResponse

#: Jobs listed per definition, newest first (the rest are counted in ``job_count``).
JOBS_SHOWN = 20


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _version(version: TrainingVersion) -> dict[str, Any]:
    return {
        "number": version.number,
        "handler": version.handler,
        "image": version.image,
        "description": version.description,
        "archived": version.archived,
        "created_at": _time(version.created_at),
    }


def _job(job: TrainingJob) -> dict[str, Any]:
    return {
        "id": job.id,
        "version": job.version,
        "status": job.status,
        "reason": job.reason or None,
        "description": job.description,
        "instance_type": job.instance_type,
        "archived": job.archived,
        "statistics": job.statistics,
        "created_at": _time(job.created_at),
        "modified_at": _time(job.modified_at),
        "start_time": _time(job.start_time),
        "completion_time": _time(job.completion_time),
    }


def _model(model: TrainingModel) -> dict[str, Any]:
    return {
        "id": model.id,
        "training_job_id": model.training_job_id,
        "description": model.description,
        "archived": model.archived,
        "created_at": _time(model.created_at),
    }


def console_training_routes(store: TrainingStore, prefix: str) -> list[BaseRoute]:
    """``GET {prefix}/training`` and ``GET {prefix}/training/jobs/{job}/statistics``."""

    async def overview(request: Request) -> Response:
        jobs: dict[str, list[TrainingJob]] = {}
        for job in store.jobs():
            jobs.setdefault(job.definition_id, []).append(job)
        definitions = []
        for definition in store.definitions():
            own = list(reversed(jobs.get(definition.id, [])))
            definitions.append(
                {
                    "id": definition.id,
                    "name": definition.name,
                    "archived": definition.archived,
                    "created_at": _time(definition.created_at),
                    "versions": [_version(v) for v in store.versions(definition.id)],
                    "job_count": len(own),
                    "jobs": [_job(j) for j in own[:JOBS_SHOWN]],
                    "models": [_model(m) for m in store.models(definition.id)],
                }
            )
        return JSONResponse({"definitions": definitions})

    async def statistics(request: Request) -> Response:
        job = store.job(request.path_params["job"], with_history=True)
        return JSONResponse(
            {"id": job.id, "status": job.status, "statistics": job.statistics, "history": job.history}
        )

    return [
        Route(f"{prefix}/training", overview, methods=["GET"]),
        Route(f"{prefix}/training/jobs/{{job}}/statistics", statistics, methods=["GET"]),
    ]
