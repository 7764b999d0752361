"""Runs and triggers of one control process: each run an asyncio task (`execute`), at most
``max_parallel`` at once (the others ``pending``); each enabled trigger's input looked at every
``poll_seconds`` by one watcher task, a run created for each new file.

A run's record is written before its task starts, so a control process that dies leaves a record:
the next one (`Runs.restore`) ends what the dead one's runs left running (their process ids are in
``runs/<run>.pid``), marks them ``failed`` ("control process restarted") and starts the pending ones.
A trigger records each file it has seen in the same transaction as the file's run (the store's
`add_trigger_run`), so a file gets one run, across restarts too. A file is run once two looks in a
row find it unchanged (its size and time, or its version in object storage): not while it is
being written. Files already there when a trigger is created are not run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from inferd.client import ClientError
from inferd.core.errors import Conflict, InvalidInput
from inferd.core.processes import identity
from inferd.core.settings import DialectSettings
from inferd.platform.artifacts import ArtifactStore
from inferd.platform.records import Run, RunState, Trigger, of_deployment
from inferd.platform.runs import locations
from inferd.platform.runs.execute import Job, RunFailed, execute
from inferd.platform.service_tokens import TOKENS_VARIABLE, new_token
from inferd.platform.services.logs import ServiceLog
from inferd.platform.services.sessions import SIGKILL, running, signal_session
from inferd.platform.store import FINAL_RUN_STATES, Store
from inferd.storage.cache import ModelCache, cache_of
from inferd.storage.errors import StorageError, shown
from inferd.storage.locations import is_remote
from inferd.storage.upload import upload

logger = logging.getLogger("inferd.platform.runs")

RESTARTED = "control process restarted"
TIMEOUT_SETTING = "INFERD_RUN_TIMEOUT"
_ENV_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


class Runs:
    """Runs and triggers over the platform's store, bundles and folders (``root``: its data folder)."""

    def __init__(self, store: Store, artifacts: ArtifactStore, root: Path) -> None:
        self.store, self.artifacts = store, artifacts
        self.log_dir = root / "logs"
        self.work_root = root / "runs"
        self.poll_seconds = 2.0
        self.max_parallel = 4
        self.storage_check_seconds = 10.0
        #: Seconds a run may take once started (`configure`), and the runs that asked for their own.
        self.timeout = 24 * 3600.0
        self._timeouts: dict[str, float] = {}
        #: Raises when one more run does not fit the platform's process budget (`Platform.budget`).
        self.admit: Callable[[], None] = lambda: None
        self.cache = ModelCache(root / "model-cache", 10 * 1024**3)
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._pids: dict[str, int] = {}
        self._slots: asyncio.Semaphore | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._closing = False
        #: (trigger, file) → the file's fingerprint at the last look; files whose run exists.
        self._looked: dict[tuple[str, str], tuple[object, ...]] = {}
        self._done: set[tuple[str, str]] = set()

    def configure(
        self, settings: DialectSettings, poll_seconds: float, max_parallel: int, timeout: float = 24 * 3600.0
    ) -> None:
        """The control process's settings: its model cache (for inputs in object storage), how often
        triggers look, how many runs go at once and how long one may take. A run's process gets a
        token of its own (`new_token`), never the control process's."""
        self.cache = cache_of(settings)
        self.poll_seconds, self.max_parallel, self.timeout = poll_seconds, max_parallel, timeout

    # ---- runs

    async def submit(
        self,
        deployment: str,
        version_id: str,
        inputs: list[str],
        output: str,
        parameters: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Run:
        """Record a ``pending`` run and start it (once a slot is free); it is stopped and ``failed``
        ("timed out") ``timeout`` seconds after it started (default: `configure`'s). Unknown records
        are NotFound; an input that does not exist, an output that is a file, too many inputs are
        InvalidInput; a run past the process budget is BudgetExceeded."""
        found = self.store.deployment(deployment)
        version = of_deployment(self.store.version(version_id), found, InvalidInput)
        checked = await asyncio.to_thread(locations.check_inputs, inputs)  # walks folders
        output = locations.check_output(output)
        environment = _parameters(parameters or {})
        self.admit()  # no await from here to its task: counted at once
        run = self.store.add_run(found.id, version.id, checked, output, environment)
        if timeout is not None:
            self._timeouts[run.id] = timeout
        self._start(run.id)
        return run

    def active(self) -> int:
        """The runs that run, or will once a slot is free (at most ``max_parallel``): one process
        each, for the process budget."""
        return min(len(self._tasks), self.max_parallel)

    async def cancel(self, run_id: str) -> Run:
        """Stop a pending or running run (its process's session ended): ``cancelled``. Conflict once
        it has finished."""
        run = self.store.run(run_id)
        if run.state in FINAL_RUN_STATES:
            raise Conflict(f"run {run.id} is {run.state.value} already")
        task = self._tasks.get(run.id)
        if task is None:  # recorded, not started here
            return self._finish(run.id, RunState.CANCELLED, "cancelled")
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), 60)
        return self.store.run(run.id)

    def logs(self, run_id: str, lines: int = 100) -> list[str]:
        run = self.store.run(run_id)
        return ServiceLog(self.log_dir / f"{run.id}.log").tail(lines)

    # ---- triggers

    async def create_trigger(
        self,
        deployment: str,
        version_id: str,
        input: str,
        output: str,
        enabled: bool = True,
        parameters: Mapping[str, Any] | None = None,
    ) -> Trigger:
        """A trigger running ``version_id`` for each file that appears under ``input`` from now on,
        each run with ``parameters`` (checked as a run's)."""
        found = self.store.deployment(deployment)
        version = of_deployment(self.store.version(version_id), found, InvalidInput)
        locations.check_watched(input)
        output = locations.check_output(output)
        environment = _parameters(parameters or {})
        try:
            there = await asyncio.to_thread(locations.watched, input, self.storage_check_seconds)
        except StorageError as exc:
            raise InvalidInput(f"input {input!r}: {exc}") from None
        # no await from here: the watcher does not look at the trigger before its files are marked
        trigger = self.store.add_trigger(found.id, version.id, input, output, enabled, environment)
        for key in there:
            self.store.trigger_saw(trigger.id, key)
        return trigger

    def set_trigger_enabled(self, trigger_id: str, enabled: bool) -> Trigger:
        return self.store.update_trigger(trigger_id, enabled=enabled)

    def delete_trigger(self, trigger_id: str) -> None:
        """Delete a trigger: it starts no more runs; the runs it started go on."""
        self.store.delete_trigger(trigger_id)
        self._forget(trigger_id)

    # ---- the control process's life

    async def restore(self) -> None:
        """After a (re)start: end and fail the runs a previous control process left running, start the
        pending ones, and start watching the triggers."""
        self._closing = False
        for run in self.store.runs():
            if run.state is RunState.RUNNING:
                self._end_leftover(run.id)
                self._finish(run.id, RunState.FAILED, RESTARTED)
            elif run.state is RunState.PENDING:
                self._start(run.id)
        if self._watcher is None:
            self._watcher = asyncio.create_task(self._watch(), name="trigger watcher")

    def detach(self) -> None:
        """The control process stops: kill every run's process at once (its record stays ``running``
        for the next control process to fail) and stop the tasks without touching the store."""
        self._closing = True
        for pid in self._pids.values():
            signal_session(pid, SIGKILL)
        for task in [*self._tasks.values(), *([self._watcher] if self._watcher else [])]:
            task.cancel()
        self._watcher = None

    # ---- inside

    def _start(self, run_id: str) -> None:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_parallel)
        self._tasks[run_id] = asyncio.create_task(self._run(run_id, self._slots), name=f"run {run_id}")

    async def _run(self, run_id: str, slots: asyncio.Semaphore) -> None:
        log = ServiceLog(self.log_dir / f"{run_id}.log")
        work = self.work_root / run_id
        ended: tuple[RunState, str] | None = None
        try:
            async with slots:
                run = self.store.run(run_id)
                if run.state is not RunState.PENDING:
                    return
                self.store.update_run(run_id, state=RunState.RUNNING)
                log.note(f"run {run_id}: {len(run.inputs)} input(s) into {shown(run.output)}")
                limit = self._timeouts.get(run_id, self.timeout)
                try:
                    ended = await asyncio.wait_for(self._execute(run, work, log), limit)
                except asyncio.TimeoutError:  # its process's session was ended as on a cancel
                    said = f"timed out after {limit:g} s (its timeout, or {TIMEOUT_SETTING})"
                    ended = (RunState.FAILED, said)
        except asyncio.CancelledError:
            ended = (RunState.CANCELLED, "cancelled")
            raise
        except Exception as exc:  # a bug here must not leave the run running
            logger.exception("run %s failed", run_id)
            ended = (RunState.FAILED, f"the run failed: {exc}")
        finally:
            self._tasks.pop(run_id, None)
            self._timeouts.pop(run_id, None)
            self._pids.pop(run_id, None)
            self._pid_file(run_id).unlink(missing_ok=True)
            # the work folder is gone before anyone sees the run finished
            await asyncio.to_thread(shutil.rmtree, work, True)
            if ended is not None and not self._closing:
                state, reason = ended
                log.note(state.value if reason in ("", state.value) else f"{state.value}: {reason}")
                self._finish(run_id, state, reason)

    async def _execute(self, run: Run, work: Path, log: ServiceLog) -> tuple[RunState, str]:
        version = self.store.version(run.version_id)
        # answers bound for object storage or an http(s) location are written in the run's work
        # folder (removed whatever happens), then uploaded
        remote = is_remote(run.output)
        output = work / "output" if remote else Path(run.output)
        try:
            bundle = work / "bundle"
            await asyncio.to_thread(shutil.rmtree, bundle, True)
            # named after the deployment, as a service's folder (`Platform._unpacked`)
            folder = bundle / self.store.deployment(run.deployment_id).name
            await asyncio.to_thread(self.artifacts.unpack, version.digest, folder)
            files = await asyncio.to_thread(locations.expand, run.inputs, self.cache)
            token = new_token()  # its one-off server takes this one only
            environment = {
                **version.environment,
                **{k: str(v) for k, v in run.parameters.items()},
                TOKENS_VARIABLE: token,
            }
            job = Job(
                version,
                folder,
                files,
                output,
                environment,
                log,
                token=token,
                started=lambda pid: self._started(run.id, pid),
                destination=shown(run.output) if remote else None,
            )
            outcome = await execute(job)
            if remote:
                for uri in await asyncio.to_thread(upload, output, run.output):
                    log.note(f"uploaded {uri}")
        except (RunFailed, InvalidInput, StorageError, ClientError) as exc:
            return RunState.FAILED, str(exc)
        finally:
            for item in run.inputs:
                if is_remote(item):  # the cache may evict it again
                    self.cache.release(item)
        if outcome.failed:
            total = outcome.written + outcome.failed
            return RunState.FAILED, f"{outcome.failed} of {total} inputs failed; first: {outcome.first_error}"
        return RunState.SUCCEEDED, ""

    def _started(self, run_id: str, pid: int) -> None:
        self._pids[run_id] = pid
        path = self._pid_file(run_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(identity(pid))

    def _pid_file(self, run_id: str) -> Path:
        return self.work_root / f"{run_id}.pid"

    def _end_leftover(self, run_id: str) -> None:
        """Kill what a dead control process's run left running (its session), if anything."""
        path = self._pid_file(run_id)
        with contextlib.suppress(OSError, ValueError):
            recorded = path.read_text().strip()
            if recorded and running(recorded):
                signal_session(int(recorded.split(":", 1)[0]), SIGKILL)
        path.unlink(missing_ok=True)
        shutil.rmtree(self.work_root / run_id, ignore_errors=True)

    def _finish(self, run_id: str, state: RunState, reason: str) -> Run:
        try:
            return self.store.update_run(run_id, state=state, reason=reason)
        except Conflict:  # finished meanwhile
            return self.store.run(run_id)

    # ---- triggers' watcher

    async def _watch(self) -> None:
        while True:
            try:
                await self.look()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("watching the triggers failed; looking again in %g s", self.poll_seconds)
            await asyncio.sleep(self.poll_seconds)

    async def look(self) -> list[Run]:
        """One look at every enabled trigger's input: a run for each new file found unchanged since
        the last look. The runs started."""
        started = []
        for trigger in self.store.triggers(enabled=True):
            try:
                files = await asyncio.to_thread(locations.watched, trigger.input, self.storage_check_seconds)
            except (OSError, StorageError) as exc:
                logger.warning("trigger %s cannot read %s: %s", trigger.id, trigger.input, exc)
                continue
            for key, seen in files.items():
                mark = (trigger.id, key)
                if mark in self._done:
                    continue
                if self._looked.get(mark) != seen.fingerprint:
                    self._looked[mark] = seen.fingerprint
                    continue
                try:
                    run = self.store.add_trigger_run(trigger.id, key, [seen.input], trigger.output)
                except Exception:  # deleted meanwhile
                    logger.exception("trigger %s could not start a run for %s", trigger.id, key)
                    break
                self._looked.pop(mark, None)
                self._done.add(mark)
                if run is not None:
                    logger.info("trigger %s: run %s for %s", trigger.id, run.id, seen.input)
                    self._start(run.id)
                    started.append(run)
        return started

    def _forget(self, trigger_id: str) -> None:
        self._looked = {mark: value for mark, value in self._looked.items() if mark[0] != trigger_id}
        self._done = {mark for mark in self._done if mark[0] != trigger_id}


def _parameters(parameters: Mapping[str, Any]) -> dict[str, str]:
    """The run's parameters: environment variables of its process (ABEJA's user parameters)."""
    found = {}
    for key, value in parameters.items():
        if not isinstance(key, str) or not key or key[0].isdigit() or not set(key) <= _ENV_NAME_CHARS:
            raise InvalidInput(f"parameter name {key!r} must be letters, digits and '_' (a variable name)")
        if isinstance(value, (dict, list)) or value is None:
            raise InvalidInput(f"parameter {key} must be a string, number or boolean, not {value!r}")
        found[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return found
