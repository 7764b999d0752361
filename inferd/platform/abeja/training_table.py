"""The routes of ABEJA training (``/organizations/{o}/training/definitions...``) and what they run
over: the training records and models (`TrainingStore`, its own SQLite file), the versions' bundles (an
`ArtifactStore` of training's own, with the platform's archive caps) and the jobs (`TrainingJobs`,
one of the platform's companions: counted in its process budget, detached with it). Built once per
control process by `training_routes`, which also restores the jobs a previous one left."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from inferd.platform.abeja.job_tokens import JobTokens
from inferd.platform.abeja.presign import Presigner
from inferd.platform.abeja.training import TrainingAPI
from inferd.platform.abeja.training_console import console_training_routes
from inferd.platform.abeja.training_job_routes import TrainingJobRoutes
from inferd.platform.abeja.training_jobs import JobSettings, TrainingJobs
from inferd.platform.abeja.training_models import TrainingModels
from inferd.platform.abeja.training_store import TrainingStore
from inferd.platform.artifacts import ArtifactStore
from inferd.platform.manager import Platform
from inferd.platform.settings import PlatformSettings
from inferd.protocols.control import ControlRoute
from inferd.server.limits import BodyLimit, SizedControlRoute

Handler = Callable[[Request], Awaitable[Response]]
#: The control API's prefix (`inferd.platform.api.routes.PREFIX`), where the console reads training.
CONTROL_PREFIX = "/platform/v1"
Wrap = Callable[[Handler], Handler]


def training_routes(
    platform: Platform, settings: PlatformSettings, presigner: Presigner, wrap: Wrap, prefix: str
) -> tuple[list[BaseRoute], Callable[[Mapping[str, str] | None], dict[str, str]]]:
    """The routes, and what gives a service or run given ``models`` its training model
    (`TrainingModels.environment`)."""
    root = (settings.data_dir / "platform").resolve() / "abeja-training"
    store = TrainingStore(root / "training.sqlite")
    artifacts = ArtifactStore(
        root / "artifacts",
        settings.max_bundle_size,
        max_header_bytes=settings.max_archive_header_size,
        max_metadata_bytes=settings.max_archive_metadata_size,
    )
    job_settings = JobSettings(
        settings.abeja_training_max_jobs, settings.abeja_training_timeout, settings.abeja_training_pythons
    )
    jobs = TrainingJobs(store, artifacts, root, JobTokens(root.parent), job_settings)
    jobs.admit = lambda: platform.budget.check(1)
    platform.companions.append(jobs)
    jobs.restore()
    api = TrainingAPI(store, artifacts)
    api.forget_jobs = jobs.forget
    d = "/training/definitions/{definition}"
    job_routes = TrainingJobRoutes(api, jobs, presigner)
    models = TrainingModels(api, artifacts, root, presigner)
    api.forget_models = models.forget
    m = f"{d}/models/{{model}}"
    v, j = f"{d}/versions/{{version}}", f"{d}/jobs/{{job}}"
    table: list[tuple[str, str, Handler]] = [
        ("/training/definitions", "GET", api.definitions),
        ("/training/definitions", "POST", api.create_definition),
        (d, "GET", api.definition_record),
        (d, "DELETE", api.delete_definition),
        (f"{d}/archive", "POST", api.archive_definition),
        (f"{d}/unarchive", "POST", api.unarchive_definition),
        (f"{d}/versions", "GET", api.versions),
        (v, "GET", api.version),
        (v, "PATCH", api.update_version),
        (v, "DELETE", api.delete_version),
        (f"{v}/archive", "POST", api.archive_version),
        (f"{v}/unarchive", "POST", api.unarchive_version),
        (f"{d}/git/versions", "POST", api.from_git),
        (f"{v}/jobs", "POST", job_routes.create_job),
        (f"{d}/jobs", "GET", job_routes.list_jobs),
        (j, "GET", job_routes.job),
        (f"{j}/stop", "POST", job_routes.stop),
        (f"{j}/archive", "POST", job_routes.archive),
        (f"{j}/unarchive", "POST", job_routes.unarchive),
        (f"{j}/logs", "GET", job_routes.logs),
        (f"{j}/statistics", "GET", job_routes.statistics),
        (f"{j}/statistics", "POST", job_routes.report_statistics),
        (f"{j}/result", "GET", job_routes.result),
        (f"{j}/result.zip", "GET", job_routes.result_file),
        (f"{d}/models", "GET", models.list_models),
        (m, "GET", models.model),
        (m, "PATCH", models.update),
        (f"{m}/download", "GET", models.download),
        (f"{m}/model.zip", "GET", models.file),
        (f"{m}/archive", "POST", models.archive),
        (f"{m}/unarchive", "POST", models.unarchive),
    ]
    upload = BodyLimit(settings.max_bundle_size, "INFERD_MAX_BUNDLE_SIZE")
    built: list[BaseRoute] = [
        SizedControlRoute(prefix + path, wrap(handler), methods=["POST"], body_limit=upload)
        for path, handler in ((f"{d}/versions", api.create_version), (f"{d}/models", models.create))
    ]
    built += [
        (Route if method == "GET" else ControlRoute)(prefix + path, wrap(handler), methods=[method])
        for path, method, handler in table
    ]
    # what the console's training pages read (read-only, under the control API)
    built += console_training_routes(store, CONTROL_PREFIX)
    return built, models.environment
