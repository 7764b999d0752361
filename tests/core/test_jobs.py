"""Jobs: SQLite records shared by workers and kept across restarts, and real ``spawn`` processes
that finish, fail, die, are cancelled (here or by another worker) and are stopped at shutdown."""

from __future__ import annotations

import functools
import logging
import multiprocessing
import os
import re
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from inferd.core import jobs
from inferd.core.jobs import STOPPED, JobRecord, JobRunner, JobStatus, JobStore
from tests.core import job_targets


@pytest.fixture
def store(tmp_path: Path) -> Iterator[JobStore]:
    store = JobStore(tmp_path / "state" / "jobs.sqlite3")
    yield store
    store.close()


@pytest.fixture
def runner(store: JobStore) -> Iterator[JobRunner]:
    runner = JobRunner(store)
    yield runner
    runner.shutdown()


def start(runner: JobRunner, target: Callable[[], Any], *cleanup: Path, args: Any = None) -> JobRecord:
    record = runner.store.create("model", args or {})
    runner.start(record, target, cleanup=cleanup)
    return record


def ended(runner: JobRunner, record: JobRecord) -> JobRecord:
    assert runner.wait(record.uuid, timeout=30), "the job did not end"
    final = runner.store.get(record.model, record.uuid)
    assert final is not None
    return final


def temp_file(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.write_bytes(b"upload")
    return path


def wait_for(condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def gone(pid: int) -> bool:
    """Whether the process has ended (a zombie waiting for a reaper other than us counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


def test_records_go_through_their_life_once(store: JobStore) -> None:
    first = store.create("model", {"epochs": 3, "shape": (2, 2)})
    second = store.create("model", {})
    store.create("other", [])
    assert re.fullmatch(r"[0-9a-f]{32}", first.uuid)
    assert first.args == {"epochs": 3, "shape": [2, 2]}  # as a JSON round trip gives it back
    assert first.status is JobStatus.RUNNING and first.finish_date is None
    assert abs((datetime.now() - first.date).total_seconds()) < 5
    assert store.get("model", first.uuid) == first  # microseconds included
    assert store.get("other", first.uuid) is None
    assert [r.uuid for r in store.list("model")] == [first.uuid, second.uuid]

    assert store.finish(first.uuid, {"accuracy": 0.9})
    assert not store.fail(first.uuid, "too late")  # a record leaves "running" once
    done = store.get("model", first.uuid)
    assert done is not None and done.status is JobStatus.DONE and done.output == {"accuracy": 0.9}
    assert done.finish_date is not None and done.finish_date >= done.date and done.message is None

    assert store.fail(second.uuid, "out of memory")
    failed = store.get("model", second.uuid)
    assert failed is not None and (failed.status, failed.message) == (JobStatus.ERROR, "out of memory")

    third = store.create("model", None)
    assert store.cancel(third.uuid)
    cancelled = store.get("model", third.uuid)
    assert cancelled is not None and cancelled.status is JobStatus.CANCELLED
    assert cancelled.message == "cancelled" and cancelled.finish_date is not None

    assert store.delete(first.uuid) and not store.delete(first.uuid)
    assert [r.uuid for r in store.list("model")] == [second.uuid, third.uuid]
    assert store.status(first.uuid) is None


def test_output_that_is_not_json_is_stored_as_text(store: JobStore, caplog: pytest.LogCaptureFixture) -> None:
    record = store.create("model", {})
    with caplog.at_level(logging.WARNING, "inferd.jobs"):
        store.finish(record.uuid, {1, 2})
    assert "returned a set" in caplog.text
    stored = store.get("model", record.uuid)
    assert stored is not None and stored.output == "{1, 2}"
    with pytest.raises(TypeError):
        store.create("model", {"file": object()})


def test_records_survive_a_restart_and_running_ones_are_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite3"
    before = JobStore(path)
    running, done = before.create("model", {"a": 1}), before.create("model", {})
    before.finish(done.uuid, [1, 2])
    before.close()

    after = JobStore(path)
    assert after.interrupt_running("the server stopped") == 1
    assert after.interrupt_running("the server stopped") == 0
    records = after.list("model")
    assert [r.uuid for r in records] == [running.uuid, done.uuid]
    assert [r.status for r in records] == [JobStatus.ERROR, JobStatus.DONE]
    assert records[0].message == "the server stopped" and records[0].args == {"a": 1}
    assert records[0].finish_date is not None and records[1].output == [1, 2]
    after.close()


def test_two_workers_share_one_file(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite3"
    one, two = JobStore(path), JobStore(path)
    try:
        record = one.create("model", {})
        assert two.get("model", record.uuid) == record
        assert two.finish(record.uuid, "ok")
        seen = one.get("model", record.uuid)
        assert seen is not None and seen.status is JobStatus.DONE
        other = two.create("model", {})
        assert [r.uuid for r in one.list("model")] == [record.uuid, other.uuid]
        assert one.delete(other.uuid) and two.get("model", other.uuid) is None
    finally:
        one.close()
        two.close()


def test_processes_opening_a_new_store_together_all_open_it(tmp_path: Path) -> None:
    """Workers set a new store up at once (SQLite refuses a second WAL switch at the same time, busy
    timeout or not): every one of them opens it."""
    context = multiprocessing.get_context("spawn")
    for round in range(3):
        path, start = tmp_path / f"jobs-{round}.sqlite3", context.Barrier(4)
        processes = [
            context.Process(target=job_targets.open_store, args=(str(path), start)) for _ in range(4)
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join(60)
        assert [process.exitcode for process in processes] == [0, 0, 0, 0]


def test_a_job_returns_its_output_and_its_files_are_removed(runner: JobRunner, tmp_path: Path) -> None:
    upload = temp_file(tmp_path, "upload")
    folder = tmp_path / "unpacked"
    folder.mkdir()
    (folder / "data.csv").write_text("1,2")
    # a megabyte of output: the result is read before the process is joined, or this would hang
    record = start(runner, functools.partial(job_targets.add, 2, 3), upload, folder)
    assert runner.running() == [record.uuid]
    final = ended(runner, record)
    assert final.status is JobStatus.DONE, final.message
    assert final.output == {"sum": 5, "big": "x" * 1_000_000}
    assert final.finish_date is not None and final.finish_date >= final.date
    assert not upload.exists() and not folder.exists()
    assert runner.running() == []


def test_failures_are_recorded_with_a_reason(runner: JobRunner, tmp_path: Path) -> None:
    upload = temp_file(tmp_path, "upload")
    raised = start(runner, job_targets.raise_value_error, upload)
    unpicklable = start(runner, job_targets.raise_unpicklable)
    died = start(runner, functools.partial(job_targets.exit_hard, 3))
    not_json = start(runner, job_targets.return_object)

    assert ended(runner, raised).message == "the learning rate must be positive"
    assert ended(runner, unpicklable).message == "weights could not be read"
    final = ended(runner, died)
    assert final.status is JobStatus.ERROR and final.message is not None and "exit code 3" in final.message
    assert ended(runner, not_json).output == "{1, 2}"
    assert all(ended(runner, r).status is JobStatus.ERROR for r in (raised, unpicklable))
    assert not upload.exists()


def test_a_job_that_cannot_start_fails_at_once(runner: JobRunner, tmp_path: Path) -> None:
    upload = temp_file(tmp_path, "upload")
    with pytest.raises(Exception, match="pickle"):
        start(runner, lambda: None, upload)
    (record,) = runner.store.list("model")
    assert record.status is JobStatus.ERROR and record.message is not None
    assert not upload.exists() and runner.running() == []


def test_cancel_stops_the_process_and_its_children(runner: JobRunner, tmp_path: Path) -> None:
    upload, started = temp_file(tmp_path, "upload"), tmp_path / "started"
    record = start(runner, functools.partial(job_targets.sleep_with_child, 60, started), upload)
    wait_for(started.exists)
    pid, child = map(int, started.read_text().split())

    began = time.monotonic()
    assert runner.cancel(record.uuid)
    assert time.monotonic() - began < 3
    final = runner.store.get("model", record.uuid)
    assert final is not None and final.status is JobStatus.CANCELLED and final.finish_date is not None
    assert gone(pid) and not upload.exists() and runner.running() == []
    wait_for(lambda: gone(child), timeout=5)  # the job's own subprocess went with it
    assert not runner.cancel(record.uuid)  # no longer running here


def test_a_job_cancelled_by_another_worker_is_stopped_here(
    runner: JobRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs, "POLL_SECONDS", 0.1)
    started = tmp_path / "started"
    record = start(runner, functools.partial(job_targets.sleep, 60, started))
    wait_for(started.exists)
    other_worker = JobStore(runner.store.path)
    try:
        assert other_worker.cancel(record.uuid)
        assert other_worker.delete(record.uuid)
    finally:
        other_worker.close()
    assert runner.wait(record.uuid, timeout=10)
    assert gone(int(started.read_text()))


def test_shutdown_stops_every_job(runner: JobRunner, tmp_path: Path) -> None:
    started = [tmp_path / "one", tmp_path / "two"]
    records = [start(runner, functools.partial(job_targets.sleep, 60, path)) for path in started]
    for path in started:
        wait_for(path.exists)
    runner.shutdown(timeout=5)
    assert runner.running() == []
    for record, path in zip(records, started, strict=True):
        final = runner.store.get("model", record.uuid)
        assert final is not None and (final.status, final.message) == (JobStatus.ERROR, STOPPED)
        assert gone(int(path.read_text()))
    with pytest.raises(RuntimeError, match="shut down"):
        start(runner, functools.partial(job_targets.sleep, 0))
