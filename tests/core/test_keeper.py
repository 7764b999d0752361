"""The process keeper that workers, model processes and training jobs share: memory limits, how a
process is stopped, and the reason its end is counted under."""

from __future__ import annotations

import multiprocessing
import signal
import time
from collections.abc import Callable
from typing import Any

from inferd.core.keeper import KeptProcess, stop_all
from inferd.core.processes import MIB
from tests.core import kept_targets

_spawn = multiprocessing.get_context("spawn")


def started(target: Callable[..., None], *args: Any) -> KeptProcess:
    process = _spawn.Process(target=target, args=args, daemon=True)
    process.start()
    return KeptProcess(process, "test process")


def test_stop_all_shares_one_grace_period_then_kills_and_reaps() -> None:
    polite = started(kept_targets.sleep, 60)
    ready = [_spawn.Event() for _ in range(2)]
    stubborn = [started(kept_targets.ignore_sigterm, 60, event) for event in ready]
    assert all(event.wait(20) for event in ready)  # they ignore SIGTERM from here on
    began = time.monotonic()
    stop_all([polite, *stubborn], grace=1.0)
    assert time.monotonic() - began < 1.9  # one grace for all, not one each
    assert polite.exitcode == -signal.SIGTERM
    assert [process.exitcode for process in stubborn] == [-signal.SIGKILL] * 2
    assert polite.reason() == "signal"


def test_a_process_over_its_memory_limit_is_killed_for_memory() -> None:
    small = started(kept_targets.sleep, 60)
    large = started(kept_targets.hold_memory, 200, 60)
    try:
        deadline = time.monotonic() + 15
        while not large.over_memory(150 * MIB) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert large.join(5)
        assert (large.exitcode, large.reason()) == (-signal.SIGKILL, "memory")
        assert not small.over_memory(150 * MIB)
        assert small.exitcode is None
    finally:
        stop_all([small, large], grace=1.0)


def test_a_process_keeps_the_first_reason_it_was_killed_for() -> None:
    process = started(kept_targets.sleep, 60)
    process.kill("hang")
    process.kill("memory")
    assert process.join(5)
    assert process.reason() == "hang"


def test_a_process_that_ended_by_itself_is_not_blamed() -> None:
    process = started(kept_targets.sleep, 0)
    assert process.join(10)
    process.kill("memory")  # too late: it had already exited
    assert (process.exitcode, process.reason(), process.killed_for) == (0, "exit", None)
