"""ABEJA training jobs as processes: each job runs its version's ``handler(context)`` once
(`training_entry`) in a session of its own, from the version unpacked in its work folder, at most
``max_jobs`` at once (the others ``Pending``), each counted in the platform's process budget.

Built from the runs' pieces (`inferd.platform.runs`): the log (`ServiceLog`), the session helpers
(`end_session`: SIGTERM, then SIGKILL after a grace, so ``stop-job`` ends the whole tree within 10 s),
the pid file with the process's identity so that a control process that died leaves nothing running
(`restore` kills what is left and marks those jobs ``Failed``), and the budget's admission.

The job's process gets: ``TRAINING_JOB_DEFINITION_NAME``, ``TRAINING_JOB_ID``,
``ABEJA_TRAINING_RESULT_DIR`` (its result folder), ``ABEJA_ORGANIZATION_ID``,
``ABEJA_STORAGE_DIR_PATH`` (a cache shared by the jobs), ``TRAINING_JOB_DATASETS`` (JSON) and the
version's then the job's environment; ``ABEJA_API_URL`` and a token of its own (`JobTokens`) in
ABEJA's credential variables, never the control process's (``INFERD_*`` variables of the control
process are not passed on). It runs under the Python its version's ``image`` maps to
(``INFERD_ABEJA_TRAINING_PYTHONS``), else the control process's. When it completes, its result
folder is zipped as the job's result.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from inferd.core.processes import identity
from inferd.platform.abeja import training_entry
from inferd.platform.abeja.job_tokens import JobTokens
from inferd.platform.abeja.training_spares import Spares
from inferd.platform.abeja.training_store import (
    ACTIVE,
    COMPLETE,
    FAILED,
    FINAL,
    PENDING,
    STOPPED,
    TrainingJob,
    TrainingStore,
)
from inferd.platform.artifacts import ArtifactStore
from inferd.platform.services.logs import ServiceLog
from inferd.platform.services.sessions import (
    SIGKILL,
    child_ended,
    describe_exit,
    end_session,
    running,
    signal_session,
)

logger = logging.getLogger("inferd.platform.abeja.training")

RESTARTED = "control process restarted"
TIMEOUT_SETTING = "INFERD_ABEJA_TRAINING_TIMEOUT"
#: Seconds a stopped job's process has after SIGTERM before SIGKILL (stop-job ends it within 10 s).
STOP_GRACE = 5.0
_ENTRY = Path(training_entry.__file__)
#: Bytes of a version's bundle up to which it is unpacked on the event loop (`TrainingJobs._small_here`).
INLINE_BUNDLE = 256 * 1024


@dataclass
class JobSettings:
    max_jobs: int = 2
    timeout: float = 24 * 3600.0
    #: A version's ``image`` → the Python that runs its jobs; ``*`` for every other image.
    pythons: Mapping[str, str] = field(default_factory=dict)

    def python_of(self, image: str) -> str:
        return self.pythons.get(image) or self.pythons.get("*") or sys.executable


class TrainingJobs:
    """The jobs of one control process (``root``: its folder for training: logs, work, results)."""

    def __init__(
        self,
        store: TrainingStore,
        artifacts: ArtifactStore,
        root: Path,
        tokens: JobTokens,
        settings: JobSettings,
    ) -> None:
        self.store, self.artifacts, self.tokens, self.settings = store, artifacts, tokens, settings
        self.log_dir, self.work_root, self.results = root / "logs", root / "jobs", root / "results"
        self.storage = root / "storage"
        self.spares = Spares(_ENTRY, self.work_root)
        #: Raises when one more process does not fit the platform's budget (`Platform.budget`).
        self.admit: Callable[[], None] = lambda: None
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._pids: dict[str, int] = {}
        self._slots: asyncio.Semaphore | None = None
        self._closing = False

    # ---- what the routes call ----

    def submit(self, job: TrainingJob) -> TrainingJob:
        self.admit()  # no await from here to its task: counted at once
        recorded = self.store.add_job(job)
        self._start(recorded.id)
        return recorded

    def active(self) -> int:
        """Jobs that run, or will once a slot is free (at most ``max_jobs``): one process each."""
        return min(len(self._tasks), self.settings.max_jobs)

    async def stop(self, job_id: str) -> TrainingJob:
        job = self.store.job(job_id)
        if job.status in FINAL:
            return job
        task = self._tasks.get(job.id)
        if task is None:
            return self._finish(job.id, STOPPED, "stopped")
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), 30)
        return self.store.job(job.id)

    def forget(self, job_ids: list[str]) -> None:
        """The logs and results of jobs whose records were deleted (with their definition)."""
        for job_id in job_ids:
            self.result(job_id).unlink(missing_ok=True)
            log = self.log(job_id)
            for path in [log.path, *(log.backup(n) for n in range(1, log.backups + 1))]:
                path.unlink(missing_ok=True)

    def log(self, job_id: str) -> ServiceLog:
        return ServiceLog(self.log_dir / f"{job_id}.log")

    def result(self, job_id: str) -> Path:
        return self.results / f"{job_id}.zip"

    # ---- the control process's life ----

    def restore(self) -> None:
        """After a (re)start: end what a previous control process's jobs left running and mark them
        ``Failed``; start the pending ones (when an event loop runs)."""
        self._closing = False
        for job in self.store.jobs():
            if job.status == ACTIVE:
                self._end_leftover(job.id)
                self.log(job.id).note(f"{FAILED}: {RESTARTED}")
                self._finish(job.id, FAILED, RESTARTED)
            elif job.status == PENDING and _loop_runs():
                self._start(job.id)

    def detach(self) -> None:
        """The control process stops: kill every job's process; their records stay ``Active`` for
        the next control process to fail."""
        self._closing = True
        self.spares.close()
        for pid in self._pids.values():
            signal_session(pid, SIGKILL)
        for task in self._tasks.values():
            task.cancel()

    # ---- inside ----

    def _start(self, job_id: str) -> None:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.settings.max_jobs)
        self._tasks[job_id] = asyncio.create_task(
            self._run(job_id, self._slots), name=f"training job {job_id}"
        )

    async def _run(self, job_id: str, slots: asyncio.Semaphore) -> None:
        log = self.log(job_id)
        work = self.work_root / job_id
        ended: tuple[str, str] | None = None
        try:
            async with slots:
                if self.store.job(job_id).status != PENDING:
                    return
                job = self.store.set_status(job_id, ACTIVE)
                limit = self.settings.timeout
                try:
                    ended = await asyncio.wait_for(self._execute(job, work, log), limit)
                except asyncio.TimeoutError:
                    ended = (FAILED, f"timed out after {limit:g} s ({TIMEOUT_SETTING})")
        except asyncio.CancelledError:  # stop-job (or the control process stopping: nothing recorded)
            ended = (STOPPED, "stopped")
            raise
        except Exception as exc:  # a bug here must not leave the job Active
            logger.exception("training job %s failed", job_id)
            ended = (FAILED, f"the job failed: {exc}")
        finally:
            self._tasks.pop(job_id, None)
            self._pids.pop(job_id, None)
            self._pid_file(job_id).unlink(missing_ok=True)
            await asyncio.shield(asyncio.to_thread(shutil.rmtree, work, True))
            if ended is not None and not self._closing:
                status, reason = ended
                log.note(status if not reason else f"{status}: {reason}")
                self._finish(job_id, status, reason)

    async def _execute(self, job: TrainingJob, work: Path, log: ServiceLog) -> tuple[str, str]:
        definition = self.store.definition(job.definition_id)
        version = self.store.version(job.definition_id, job.version)
        source, result = work / "source", work / "result"
        if self._small_here(version.digest):
            # a small project stored here unpacks in about a millisecond: on the loop, as a request is
            # answered, since a hop to a thread costs more than that under load (bench/training_startup.py)
            self._prepare(version.digest, work, source, result)
        else:  # one hop to a thread for the whole folder
            await asyncio.to_thread(self._prepare, version.digest, work, source, result)
        failure = work / "failure.txt"
        token = self.tokens.of(job.id)
        environment = {
            **_base_environment(),
            **version.environment,
            **job.environment,
            "TRAINING_JOB_DEFINITION_NAME": definition.name,
            "TRAINING_JOB_DEFINITION_VERSION": str(job.version),
            "TRAINING_JOB_ID": job.id,
            "TRAINING_JOB_DATASETS": json.dumps({**version.datasets, **job.datasets}, sort_keys=True),
            "DATASETS": json.dumps({**version.datasets, **job.datasets}, sort_keys=True),
            "ABEJA_TRAINING_RESULT_DIR": str(result),
            "ABEJA_STORAGE_DIR_PATH": str(self.storage),
            "ABEJA_ORGANIZATION_ID": job.environment.get("ABEJA_ORGANIZATION_ID", "")
            or _organization(job.api_url),
            "ABEJA_API_URL": job.api_url.split("/organizations/", 1)[0],
            "ABEJA_PLATFORM_USER_ID": f"job-{job.id}",
            "ABEJA_PLATFORM_PERSONAL_ACCESS_TOKEN": token,
            "PLATFORM_AUTH_TOKEN": token,
            "INFERD_TRAINING_FAILURE_FILE": str(failure),
        }
        python = self.settings.python_of(version.image)
        command = [python, str(_ENTRY), version.handler]
        log.note(f"job {job.id}: {definition.name} version {job.version}, {version.handler} with {python}")
        # the spare launcher of that Python, started ahead (`Spares`), else a process started now
        child = self.spares.take(python, environment, source, log.path, version.handler)
        try:
            if child is None:
                with log.open_for_server() as output:
                    child = subprocess.Popen(
                        command,
                        cwd=source,
                        env=environment,
                        stdin=subprocess.DEVNULL,
                        stdout=output,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
        except OSError as exc:
            return FAILED, f"cannot start {python}: {exc}"
        self._started(job.id, child.pid)
        try:
            while not child_ended(child.pid):
                await asyncio.sleep(0.1)
            code = child.wait()
        finally:
            await asyncio.shield(
                asyncio.to_thread(end_session, child.pid, STOP_GRACE, lambda: child_ended(child.pid))
            )
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=5)
        if not self._closing:  # a spare of that Python for the next job, once this one has run
            with contextlib.suppress(OSError):
                self.spares.prepare(python, _base_environment())
        if code != 0:
            said = failure.read_text("utf-8", "replace").strip() if failure.is_file() else ""
            return FAILED, said or f"the job's process {describe_exit(code)}"
        await asyncio.to_thread(_zip, result, self.result(job.id))
        return COMPLETE, ""

    def _small_here(self, digest: str) -> bool:
        """Whether the bundle of ``digest`` is in this machine's store and under `INLINE_BUNDLE`."""
        try:
            size = (
                (self.artifacts.root / "sha256" / f"{digest.removeprefix('sha256:')}.tar.gz").stat().st_size
            )
        except (OSError, ValueError):
            return False
        return size <= INLINE_BUNDLE

    def _prepare(self, digest: str, work: Path, source: Path, result: Path) -> None:
        """The job's work folder anew: the version unpacked in ``source``, an empty ``result``."""
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
        self.artifacts.unpack(digest, source)
        result.mkdir(parents=True)
        self.storage.mkdir(parents=True, exist_ok=True)

    def _started(self, job_id: str, pid: int) -> None:
        self._pids[job_id] = pid
        path = self._pid_file(job_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(identity(pid))

    def _pid_file(self, job_id: str) -> Path:
        return self.work_root / f"{job_id}.pid"

    def _end_leftover(self, job_id: str) -> None:
        path = self._pid_file(job_id)
        with contextlib.suppress(OSError, ValueError):
            recorded = path.read_text().strip()
            if recorded and running(recorded):
                signal_session(int(recorded.split(":", 1)[0]), SIGKILL)
        path.unlink(missing_ok=True)
        shutil.rmtree(self.work_root / job_id, ignore_errors=True)

    def _finish(self, job_id: str, status: str, reason: str) -> TrainingJob:
        try:
            return self.store.set_status(job_id, status, reason)
        except Exception:  # finished meanwhile, or deleted
            return self.store.job(job_id)


def _base_environment() -> dict[str, str]:
    """What a job's process has before its own variables: the control process's environment but
    inferd's settings and any credential of its own."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("INFERD_", "ABEJA_", "PLATFORM_AUTH"))}
    return {**kept, "PYTHONUNBUFFERED": "1"}


def _loop_runs() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _organization(api_url: str) -> str:
    """The organization id in the URL the job was created through (``.../organizations/<id>/...``)."""
    rest = api_url.split("/organizations/", 1)[1] if "/organizations/" in api_url else ""
    return rest.split("/", 1)[0]


def _zip(folder: Path, into: Path) -> None:
    """The result folder as a zip (what ABEJA's SDK extracts), written whole or not at all; links
    are left out."""
    into.parent.mkdir(parents=True, exist_ok=True)
    partial = into.with_suffix(".zip.partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink():
                archive.write(path, path.relative_to(folder).as_posix())
    partial.replace(into)
