"""Training and batch jobs: user code run in a process of its own, with records in a SQLite file.

Jobs run in ``spawn`` processes so a long ``train()`` never stalls serving and a crash in it (even a
segfault) only fails the job. Records live in SQLite (WAL, busy timeout) so every worker process sees
the same jobs and they survive a restart. A record leaves ``running`` exactly once: every transition
is conditional on the current status, so a job that is cancelled while it finishes ends one way only.
"""

from __future__ import annotations

import builtins
import contextlib
import fcntl
import json
import logging
import multiprocessing
import multiprocessing.util
import os
import shutil
import signal
import sqlite3
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any
from uuid import uuid4

from inferd.core.keeper import SIGKILL, KeptProcess, stop_all
from inferd.core.processes import alive, end_with_parent, identity

logger = logging.getLogger("inferd.jobs")

STOPPED = "server stopped while the job was running"
#: How often a watcher checks the store, so a job cancelled by another worker stops here too.
POLL_SECONDS = 1.0
#: How long a job that already sent its output may take to exit before it is terminated.
EXIT_GRACE_SECONDS = 5.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY,
    uuid TEXT NOT NULL UNIQUE,
    model TEXT NOT NULL,
    args TEXT NOT NULL,
    status TEXT NOT NULL,
    date TEXT NOT NULL,
    finish_date TEXT,
    output TEXT,
    message TEXT,
    owner TEXT
);
CREATE INDEX IF NOT EXISTS jobs_model ON jobs (model, seq);
"""
#: Stores written before jobs had an owner (the `identity` of the process running them) gain one.
_ADD_OWNER = "ALTER TABLE jobs ADD COLUMN owner TEXT"
ORPHANED = "the server process running the job was lost"
_COLUMNS = "uuid, model, args, status, date, finish_date, output, message"


class JobStatus(str, Enum):
    RUNNING = "running"
    DONE = "done"
    ERROR = "error"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class JobRecord:
    uuid: str
    model: str
    args: Any
    status: JobStatus
    #: Naive local time, as the dialects that expose it have always shown it.
    date: datetime
    finish_date: datetime | None = None
    output: Any = None
    message: str | None = None


@contextlib.contextmanager
def one_process_at_a_time(path: Path) -> Iterator[None]:
    """Held while a process sets up the SQLite file at ``path``: SQLite answers "database is locked"
    at once, busy timeout or not, to a connection switching the file to WAL while another does (the
    workers of one server open the store together), so they take turns, on a lock file beside it."""
    with open(path.with_name(path.name + ".lock"), "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class JobStore:
    """Records in SQLite at ``path`` (parent directories are created).

    Safe from several threads (one connection behind a lock) and from several processes that open
    the same file (WAL mode, and a busy timeout instead of immediate "database is locked" errors).
    """

    def __init__(self, path: Path, busy_timeout: float = 10.0) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        with one_process_at_a_time(path):
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
            if "owner" not in {row[1] for row in self._db.execute("PRAGMA table_info(jobs)")}:
                self._db.execute(_ADD_OWNER)

    def create(self, model: str, args: Any) -> JobRecord:
        """A new ``running`` record; ``args`` must be JSON-serialisable (``TypeError`` otherwise)."""
        text = json.dumps(args)
        record = JobRecord(uuid4().hex, model, json.loads(text), JobStatus.RUNNING, datetime.now())
        with self._lock:
            self._db.execute(
                "INSERT INTO jobs (uuid, model, args, status, date, owner) VALUES (?, ?, ?, ?, ?, ?)",
                (record.uuid, model, text, record.status.value, _date_text(record.date), identity()),
            )
        return record

    def get(self, model: str, uuid: str) -> JobRecord | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT {_COLUMNS} FROM jobs WHERE model = ? AND uuid = ?", (model, uuid)
            ).fetchone()
        return None if row is None else _record(row)

    def status(self, uuid: str) -> JobStatus | None:
        """The status of any model's job, or None once it is deleted."""
        with self._lock:
            row = self._db.execute("SELECT status FROM jobs WHERE uuid = ?", (uuid,)).fetchone()
        return None if row is None else JobStatus(row[0])

    def list(self, model: str) -> builtins.list[JobRecord]:
        """The model's records in the order they were created."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM jobs WHERE model = ? ORDER BY seq", (model,)
            ).fetchall()
        return [_record(row) for row in rows]

    def finish(self, uuid: str, output: Any) -> bool:
        """Mark a running job done; output that is not JSON is stored as its ``str``. True if it ran."""
        text, converted = _encode(output)
        if converted:
            logger.warning("job %s returned a %s, not JSON; its text is stored instead", uuid, converted)
        return self._end(uuid, JobStatus.DONE, output=text)

    def fail(self, uuid: str, message: str) -> bool:
        """Mark a running job failed with a reason. True if it was running."""
        return self._end(uuid, JobStatus.ERROR, message=message)

    def cancel(self, uuid: str, message: str = "cancelled") -> bool:
        """Mark a running job cancelled (this does not stop a process: see `JobRunner.cancel`)."""
        return self._end(uuid, JobStatus.CANCELLED, message=message)

    def delete(self, uuid: str) -> bool:
        """Remove a record, whatever its status. True if there was one."""
        with self._lock:
            return self._db.execute("DELETE FROM jobs WHERE uuid = ?", (uuid,)).rowcount > 0

    def interrupt_running(self, message: str) -> int:
        """Fail every running job; call it when no job can be running (the server just started)."""
        with self._lock:
            cursor = self._db.execute(
                "UPDATE jobs SET status = ?, finish_date = ?, message = ? WHERE status = ?",
                (JobStatus.ERROR.value, _date_text(datetime.now()), message, JobStatus.RUNNING.value),
            )
        return cursor.rowcount

    def interrupt_orphans(self, message: str = ORPHANED) -> int:
        """Fail every running job whose owner process is gone (a worker that crashed or was killed,
        which had no chance to record how its jobs ended); safe to call while other workers run."""
        with self._lock:
            rows = self._db.execute(
                "SELECT uuid, owner FROM jobs WHERE status = ?", (JobStatus.RUNNING.value,)
            ).fetchall()
        return sum(self.fail(uuid, message) for uuid, owner in rows if owner is None or not alive(owner))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _end(
        self, uuid: str, status: JobStatus, output: str | None = None, message: str | None = None
    ) -> bool:
        """The one way out of ``running``: conditional, so the first outcome recorded wins."""
        with self._lock:
            cursor = self._db.execute(
                "UPDATE jobs SET status = ?, finish_date = ?, output = ?, message = ? "
                "WHERE uuid = ? AND status = ?",
                (status.value, _date_text(datetime.now()), output, message, uuid, JobStatus.RUNNING.value),
            )
        return cursor.rowcount > 0

    def _finish_encoded(self, uuid: str, text: str) -> bool:
        return self._end(uuid, JobStatus.DONE, output=text)


@dataclass
class _Job:
    uuid: str
    kept: KeptProcess
    reader: Connection
    cleanup: tuple[Path, ...]
    #: Set when the runner itself ends the process, so its death is not reported as a failure.
    stopping: bool = False
    done: threading.Event = field(default_factory=threading.Event)


class JobRunner:
    """Runs each job in its own ``spawn`` process, watched by a thread that records how it ended.

    A job's process leads its own process group (POSIX), so cancelling it also stops what it started
    (data loader workers, ``subprocess`` calls). ``shutdown`` runs at process exit if not called.
    """

    def __init__(self, store: JobStore) -> None:
        self.store = store
        self._context = multiprocessing.get_context("spawn")
        self._jobs: dict[str, _Job] = {}
        self._lock = threading.Lock()
        self._closed = False
        # A multiprocessing finalizer, not atexit: in a worker process, multiprocessing joins child
        # processes (these jobs) before atexit handlers run, so a running job would hold up its exit.
        self._at_exit = multiprocessing.util.Finalize(None, self.shutdown, exitpriority=0)

    def start(self, record: JobRecord, target: Callable[[], Any], cleanup: Sequence[Path] = ()) -> None:
        """Run ``target`` (picklable) in a new process; its return value becomes the job's output.

        If the process cannot be started, the record is failed, ``cleanup`` removed, and the error raised.
        """
        job: _Job | None = None
        try:
            if self._closed:
                raise RuntimeError("the job runner is shut down")
            reader, writer = self._context.Pipe(duplex=False)
            process = self._context.Process(
                target=_run_child, args=(target, writer), name=f"inferd-job-{record.uuid[:8]}"
            )
            job = _Job(
                record.uuid, KeptProcess(process, f"job {record.uuid}", group=True), reader, tuple(cleanup)
            )
            try:
                process.start()
            finally:
                writer.close()  # the child holds the only write end, so its death reads as EOF
        except BaseException:
            if job is not None:
                job.reader.close()
            _remove(tuple(cleanup))
            self.store.fail(record.uuid, "the job's process could not be started")
            raise
        with self._lock:
            self._jobs[record.uuid] = job
        threading.Thread(target=self._watch, args=(job,), name=process.name, daemon=True).start()

    def cancel(self, uuid: str, timeout: float = 5.0) -> bool:
        """Mark the job cancelled and stop its process (terminate, then kill after ``timeout``).

        Returns False if the job does not run in this runner (another worker's, or already ended);
        the caller then only updates the store. Returns once the process is gone and cleaned up.
        """
        with self._lock:
            job = self._jobs.get(uuid)
        if job is None:
            return False
        job.stopping = True
        self.store.cancel(uuid)
        _stop([job], timeout)
        return True

    def running(self) -> list[str]:
        with self._lock:
            return list(self._jobs)

    def wait(self, uuid: str, timeout: float | None = None) -> bool:
        """Wait until the job has ended here and its record is final; True unless it timed out."""
        with self._lock:
            job = self._jobs.get(uuid)
        return job is None or job.done.wait(timeout)

    def shutdown(self, timeout: float = 5.0, message: str = STOPPED) -> None:
        """Stop every job's process; their records fail with ``message``. Later ``start`` calls raise."""
        self._closed = True
        self._at_exit.cancel()
        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            job.stopping = True
            with contextlib.suppress(sqlite3.ProgrammingError):  # the store may be closed already
                self.store.fail(job.uuid, message)
        _stop(jobs, timeout)

    def _watch(self, job: _Job) -> None:
        try:
            outcome = self._outcome(job)
            self._record(job, outcome)
        except sqlite3.ProgrammingError:  # the store was closed before the runner was shut down
            logger.warning("job %s ended after its store was closed; its record is not updated", job.uuid)
        except Exception:
            logger.exception("watching job %s failed", job.uuid)
        finally:
            job.reader.close()
            _remove(job.cleanup)
            with self._lock:
                self._jobs.pop(job.uuid, None)
            job.done.set()

    def _outcome(self, job: _Job) -> tuple[Any, ...] | None:
        """The child's message, or None if it died without one; the process is gone on return."""
        while True:
            ready = wait([job.reader, job.kept.sentinel], timeout=POLL_SECONDS)
            if job.reader in ready or (ready and job.reader.poll()):
                try:
                    outcome: tuple[Any, ...] | None = job.reader.recv()
                except (EOFError, OSError):  # died mid-send, or without sending
                    outcome = None
                if outcome is not None and not job.kept.join(EXIT_GRACE_SECONDS):  # e.g. threads left
                    logger.warning("job %s sent its output but did not exit; terminating it", job.uuid)
                job.kept.stop(EXIT_GRACE_SECONDS)
                return outcome
            if ready:
                job.kept.join()
                return None
            if not job.stopping and self._ended_elsewhere(job.uuid):
                logger.info("job %s was cancelled or deleted elsewhere; stopping its process", job.uuid)
                job.stopping = True
                job.kept.stop(EXIT_GRACE_SECONDS)

    def _ended_elsewhere(self, uuid: str) -> bool:
        """Whether another worker cancelled or deleted the record; a store error is not an answer."""
        try:
            return self.store.status(uuid) is not JobStatus.RUNNING
        except sqlite3.Error:
            return False

    def _record(self, job: _Job, outcome: tuple[Any, ...] | None) -> None:
        if outcome is not None and outcome[0] == "done":
            _, text, converted = outcome
            if converted:
                logger.warning(
                    "job %s returned a %s, not JSON; its text is stored instead", job.uuid, converted
                )
            self.store._finish_encoded(job.uuid, text)
        elif outcome is not None:
            _, message, details = outcome
            logger.error("job %s failed:\n%s", job.uuid, details)
            self.store.fail(job.uuid, message)
        elif not job.stopping:
            code = job.kept.exitcode
            message = f"the job's process ended without a result (exit code {code})"
            if code is not None and code < 0:
                message = f"{message[:-1]}: killed by {_signal_name(-code)})"
            logger.error("job %s: %s", job.uuid, message)
            self.store.fail(job.uuid, message)


def _run_child(target: Callable[[], Any], writer: Connection) -> None:
    """In the job's process: run ``target`` and send one outcome made only of strings.

    Exceptions are flattened to text here, because an exception that cannot be pickled (or
    unpickled) would otherwise be lost on the way to the parent.
    """
    if hasattr(os, "setpgid"):
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
    end_with_parent(_end_group)  # a worker that is killed leaves no job running unwatched
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a server process ignoring it passed that on
    try:
        output = target()
    except BaseException as exc:
        outcome: tuple[str, str, str | None] = ("error", _describe(exc), traceback.format_exc())
    else:
        text, converted = _encode(output)
        outcome = ("done", text, converted)
    writer.send(outcome)
    writer.close()


def _end_group() -> None:
    """In an orphaned job's process: end it and whatever it started (its process group)."""
    if hasattr(os, "killpg") and os.getpgid(0) == os.getpid():
        os.killpg(0, SIGKILL)
    os._exit(1)


def _stop(jobs: Sequence[_Job], timeout: float) -> None:
    """From another thread: terminate the jobs' processes, kill those that outlive ``timeout``, and
    wait until their watchers have recorded the end and cleaned up. Only the watcher reaps a process."""
    done = {id(job.kept): job.done for job in jobs}
    stop_all(
        [job.kept for job in jobs],
        timeout,
        wait=lambda kept, wait_for: done[id(kept)].wait(wait_for),
        after_kill=timeout,
    )


def _remove(paths: Sequence[Path]) -> None:
    for path in paths:
        try:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        except OSError as exc:
            logger.warning("could not remove %s after its job: %s", path, exc)


def _encode(output: Any) -> tuple[str, str | None]:
    """JSON text of ``output``, or of its ``str`` with the type name when it is not JSON."""
    try:
        return json.dumps(output), None
    except (TypeError, ValueError):
        return json.dumps(str(output)), type(output).__name__


def _describe(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, Exception) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _date_text(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


def _record(row: tuple[Any, ...]) -> JobRecord:
    uuid, model, args, status, date, finish_date, output, message = row
    return JobRecord(
        uuid=uuid,
        model=model,
        args=json.loads(args),
        status=JobStatus(status),
        date=datetime.fromisoformat(date),
        finish_date=None if finish_date is None else datetime.fromisoformat(finish_date),
        output=None if output is None else json.loads(output),
        message=message,
    )
