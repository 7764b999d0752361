"""One way to keep a child process: watch its memory, end it, and say why it ended.

Workers (`inferd.engines.supervisor`), model processes (`inferd.engines.isolation`) and training
jobs (`inferd.core.jobs`) are all kept this way, so they are killed for the same reasons, end the
same way (SIGTERM, a grace period, SIGKILL, reaped) and report the same reasons (``memory``,
``hang``, ``signal``, ``exit``). What follows a loss stays with each of them: a new worker, failed
requests and a new model process, a failed job.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable, Sequence
from multiprocessing.process import BaseProcess

from inferd.core.processes import MIB, rss_bytes

logger = logging.getLogger("inferd.keeper")
SIGKILL: int = getattr(signal, "SIGKILL", signal.SIGTERM)


class KeptProcess:
    """A started ``multiprocessing`` process, and why its keeper killed it.

    ``what`` names it in log lines ("worker", "model process", "job <uuid>"). With ``group``, signals
    go to the process group it leads, so what it started (data loader workers, ``subprocess`` calls)
    ends too.
    """

    def __init__(self, process: BaseProcess, what: str, *, group: bool = False) -> None:
        self.process = process
        self.what = what
        self.group = group
        #: Why the keeper killed it (memory, hang); None while it lives or when it ended by itself.
        self.killed_for: str | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def sentinel(self) -> int:
        """Ready (for `multiprocessing.connection.wait`) once it has ended, without reaping it."""
        return self.process.sentinel

    @property
    def exitcode(self) -> int | None:
        """None while it runs; reading it reaps a process that has ended."""
        return self.process.exitcode

    def reason(self) -> str:
        """Why it ended: what the keeper killed it for, else ``signal`` or ``exit`` by its exit code."""
        code = self.process.exitcode or 0
        return self.killed_for or ("signal" if code < 0 else "exit")

    def join(self, timeout: float | None = None) -> bool:
        """Wait for it to end and reap it; True if it has ended."""
        self.process.join(timeout)
        return self.process.exitcode is not None

    def kill(self, reason: str) -> None:
        """SIGKILL it for ``reason``; a process killed twice, or already dead, keeps its first cause."""
        if self.killed_for is None and self.process.exitcode is None:
            self.killed_for = reason
            self.signal(SIGKILL)

    def forget(self) -> None:
        """Once it has ended: drop its live gauges (requests in flight) from the multiprocess
        metrics, so a replaced worker or model process is not counted as still answering."""
        if self.pid is not None and os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(self.pid)

    def over_memory(self, limit: int) -> bool:
        """Kill it for ``memory`` when its resident memory is over ``limit`` bytes; True if it was."""
        pid = self.pid
        rss = rss_bytes(pid) if pid is not None and self.process.exitcode is None else None
        if rss is None or rss <= limit:
            return False
        logger.error(
            "%s %s uses %d MiB, over the limit of %d MiB; killing it",
            self.what,
            pid,
            rss // MIB,
            limit // MIB,
        )
        self.kill("memory")
        return True

    def signal(self, signum: int) -> None:
        """Send ``signum`` (to its group when it leads one). This reaps nothing, so a thread that
        leaves reaping to another (a job's watcher) may call it: the id is still this process's."""
        pid = self.pid
        if self.group and pid is not None and hasattr(os, "killpg"):
            with contextlib.suppress(OSError):
                if os.getpgid(pid) == pid:
                    os.killpg(pid, signum)
                    return
        with contextlib.suppress(OSError):
            if signum == SIGKILL:
                self.process.kill()
            else:
                self.process.terminate()

    def stop(self, grace: float, *, terminate: bool = True) -> None:
        """End and reap it: SIGTERM, ``grace`` seconds to exit, then SIGKILL (see `stop_all`)."""
        stop_all([self], grace, terminate=terminate)


def stop_all(
    kept: Sequence[KeptProcess],
    grace: float,
    *,
    terminate: bool = True,
    wait: Callable[[KeptProcess, float | None], bool] = KeptProcess.join,
    after_kill: float | None = None,
) -> None:
    """End every process together: SIGTERM to all (or nothing, with ``terminate=False``, when they
    were asked to stop another way), ``grace`` seconds shared by all of them to exit, then SIGKILL for
    the rest. ``wait(kept, timeout)`` says whether one has ended, reaping it by default; a caller
    whose processes another thread reaps passes its own, and ``after_kill`` bounds the last wait.
    One that has ended already gets no signal: its id may belong to another process by now."""
    if terminate:
        for process in kept:
            if not wait(process, 0):
                process.signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    survivors = [process for process in kept if not wait(process, max(0.0, deadline - time.monotonic()))]
    for process in survivors:
        logger.warning(
            "%s (process %s) did not stop within %s s; killing it", process.what, process.pid, grace
        )
        process.signal(SIGKILL)
    for process in survivors:
        wait(process, after_kill)
