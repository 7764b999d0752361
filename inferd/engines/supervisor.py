"""N worker processes serving the same HTTP and gRPC ports; a worker that dies is replaced.

A worker that dies, or outgrows ``worker_memory_limit`` (then it is killed), is replaced; the event
is logged and counted in ``inferd_worker_restarts_total{process="worker"}``. With ``isolate`` each
worker runs its models in a model process of its own (`inferd.engines.isolation`), even when there
is one worker, since the restart counts need the multiprocess metrics directory set up here.

The supervisor binds the HTTP socket once and hands it to spawned children (as uvicorn does), and
reserves the gRPC port (exclusively: no other server may hold it), which each child binds again
with SO_REUSEPORT. Metrics are written to a Prometheus multiprocess directory the supervisor
creates and removes, so ``/metrics`` on any worker reports the sum over all of them.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import shutil
import signal
import socket
import tempfile
import threading
import time
from multiprocessing.queues import Queue
from typing import Any

from inferd.config.settings import Settings
from inferd.core import control
from inferd.core.errors import ModelLoadError
from inferd.core.keeper import KeptProcess, stop_all
from inferd.core.metrics import RESTARTS
from inferd.core.processes import MIB
from inferd.engines.isolation import ModelProcess
from inferd.engines.local import Endpoints, LocalBackend, OnReady, run, serve
from inferd.engines.sockets import bind_ports, port_of
from inferd.server.app import build_runtime
from inferd.server.logging import configure_logging, log_format

logger = logging.getLogger("inferd.supervisor")
_spawn = multiprocessing.get_context("spawn")
POLL_SECONDS = 0.2


def _worker_main(
    fields: dict[str, Any],
    sock: socket.socket,
    metrics_sock: socket.socket | None,
    ready: Queue[Any],
    replaced_for: str | None = None,
) -> None:
    """A child process: its own runtime, its own models (or its model process), the shared sockets.

    A worker started in place of a lost one counts the loss: the supervisor serves no metrics, and
    the workers' counters are summed through the multiprocess directory."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C reaches the supervisor, which sends SIGTERM
    if replaced_for is not None:
        RESTARTS.labels("worker", replaced_for).inc()
    settings = Settings(**fields)
    configure_logging(settings.log_level, log_format(settings))
    try:
        run(_serve_worker(settings, sock, metrics_sock, ready))
    except ModelLoadError as exc:  # said once, without a traceback, as a single process says it
        logger.error("%s", exc.message)
        raise SystemExit(1) from None


async def _serve_worker(
    settings: Settings, sock: socket.socket, metrics_sock: socket.socket | None, ready: Queue[Any]
) -> None:
    backend = (
        ModelProcess(settings)
        if settings.isolate
        else LocalBackend(build_runtime(settings), shared_grpc_port=True)
    )
    await serve(
        settings,
        ready.put,
        http_socket=sock,
        stop_signals=(signal.SIGTERM,),
        metrics_socket=metrics_sock,
        backend=backend,
    )


class Supervisor:
    def __init__(self, settings: Settings, on_ready: OnReady) -> None:
        self.settings = settings
        self.on_ready = on_ready
        self.stopping = threading.Event()
        self.workers: list[KeptProcess] = []
        self.metrics_sock: socket.socket | None = None

    def run(self) -> int:
        settings = self.settings
        grpc_port = settings.grpc_port if settings.grpc_enabled else None
        sock, grpc_hold, self.metrics_sock = bind_ports(
            settings.host, settings.port, grpc_port, settings.metrics_port
        )
        metrics_dir = tempfile.mkdtemp(prefix="inferd-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
        os.environ[control.VARIABLE] = os.path.join(metrics_dir, "repository-control.json")
        fields = self.settings.model_dump()
        fields["port"] = port_of(sock)
        if grpc_hold is not None:
            fields["grpc_port"] = port_of(grpc_hold)
        if self.metrics_sock is not None:
            fields["metrics_port"] = port_of(self.metrics_sock)
        ready: Queue[Any] = _spawn.Queue()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: self.stopping.set())
        try:
            self.workers = [self._start(fields, sock, ready) for _ in range(self.settings.workers)]
            if not self._wait_ready(ready):
                return 1
            self._supervise(fields, sock, ready)
            return 0
        finally:
            sock.close()  # once the workers close theirs, new connections are refused, not queued
            self._stop_all()
            if self.metrics_sock is not None:
                self.metrics_sock.close()
            if grpc_hold is not None:
                grpc_hold.close()
            shutil.rmtree(metrics_dir, ignore_errors=True)
            os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
            os.environ.pop(control.VARIABLE, None)

    def _start(
        self, fields: dict[str, Any], sock: socket.socket, ready: Queue[Any], replaced_for: str | None = None
    ) -> KeptProcess:
        process = _spawn.Process(
            target=_worker_main, args=(fields, sock, self.metrics_sock, ready, replaced_for), daemon=False
        )
        process.start()
        return KeptProcess(process, "worker")

    def _wait_ready(self, ready: Queue[Any]) -> bool:
        """Announce once every worker has loaded its models; fail if one dies on the way."""
        endpoints: Endpoints | None = None
        pending = len(self.workers)
        while pending:
            if self.stopping.is_set() or any(process.exitcode is not None for process in self.workers):
                logger.error("a worker exited before every worker was ready")
                return False
            try:
                endpoints = ready.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            pending -= 1
        assert endpoints is not None
        self.on_ready(endpoints)
        return True

    def _supervise(self, fields: dict[str, Any], sock: socket.socket, ready: Queue[Any]) -> None:
        next_memory_check = time.monotonic()
        while not self.stopping.wait(POLL_SECONDS):
            if self._memory_limit is not None and time.monotonic() >= next_memory_check:
                next_memory_check = time.monotonic() + self.settings.memory_check_interval
                for worker in self.workers:
                    worker.over_memory(self._memory_limit)
            for index, worker in enumerate(self.workers):
                if worker.exitcode is None:
                    continue
                logger.warning(
                    "worker %s exited with code %s (%s); starting a new one",
                    worker.pid,
                    worker.exitcode,
                    worker.reason(),
                )
                worker.forget()
                self.workers[index] = self._start(fields, sock, ready, worker.reason())

    @property
    def _memory_limit(self) -> int | None:
        """Bytes a worker may hold; with ``isolate`` the limit is the model processes' instead."""
        limit = self.settings.worker_memory_limit
        return None if limit is None or self.settings.isolate else limit * MIB

    def _stop_all(self) -> None:
        stop_all(self.workers, self.settings.graceful_timeout + 5)
