"""The local engine of services: each one ``inferd serve`` on a loopback port, supervised by an
asyncio task of `LocalRunner`.

A service's server runs in a session of its own (see `inferd.platform.services.sessions`) and writes
to its log file directly (`inferd.platform.services.logs`). It is ``starting`` until it prints its
ready line (``inferd ready: http://127.0.0.1:PORT grpc=127.0.0.1:PORT ...``, whose ports are kept for
every restart), then
``running``. A server that exits while running is started again after a back-off; one that crashes
too often, or fails before its ready line too many times in a row, or cannot listen on its port, is
``failed``, with a reason quoting its log (`RestartPolicy`). Stopping sends SIGTERM (the server
drains), waits, then kills what is left of the session.

Nothing is orphaned when the control process restarts: servers outlive it on purpose (their own
session, their output in a file, not a pipe to it), and the control process that follows calls
`LocalRunner.adopt` for each service its store records as running. A server that still runs and
answers ``/v2/health/live`` is watched again (by polling its process id, since it is no longer our
child); one that leads its session but does not answer has its session ended; then the service is
started again on its port. A control process that ends cleanly stops its services (`aclose`) or
leaves them to the next one (`detach`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from inferd.core.errors import Conflict, NotFound
from inferd.core.processes import identity
from inferd.platform.records import ServiceState
from inferd.platform.services.logs import MIB, ServiceLog, quote
from inferd.platform.services.sessions import (
    answers,
    child_ended,
    describe_exit,
    end_session,
    leads_server,
    running,
)
from inferd.platform.services.spec import RestartPolicy, ServiceSpec, StateChange

logger = logging.getLogger("inferd.platform.services")

OnChange = Callable[[str, StateChange], None]
READY = re.compile(r"inferd ready: http://[^\s:]+:(?P<port>\d+)(?: grpc=(?:\S+:(?P<grpc>\d+)|off))?")
ACTIVE = frozenset({ServiceState.STARTING, ServiceState.RUNNING, ServiceState.STOPPING})
#: The variable that puts a Ray service on a shared cluster (else it starts a Ray of its own).
RAY_ADDRESS = "INFERD_RAY_ADDRESS"
#: How often a starting server's log is read for its ready line.
_READY_POLL = 0.05
#: How often a running server's log is checked for rotation.
_ROTATE_EVERY = 1.0


@dataclass
class _Service:
    spec: ServiceSpec
    log: ServiceLog
    port: int | None
    grpc_port: int | None = None
    state: ServiceState = ServiceState.STARTING
    pid: int | None = None
    reason: str = ""
    restarts: int = 0
    #: Our child, or the identity of a server an earlier control process started (one or neither).
    child: subprocess.Popen[bytes] | None = None
    adopted: str | None = None
    task: asyncio.Task[None] | None = None
    crashes: list[float] = field(default_factory=list)

    def ended(self) -> bool:
        """Whether its server has exited (our child stays unreaped until its session is ended)."""
        if self.child is not None:
            return child_ended(self.child.pid)
        if self.adopted is not None:
            return not running(self.adopted)
        return True

    def change(self) -> StateChange:
        return StateChange(self.state, self.port, self.pid, self.reason, self.restarts, self.grpc_port)


@dataclass(frozen=True)
class _Failure:
    reason: str
    #: Not worth trying again (the port is taken, the folder is missing).
    final: bool = False


class LocalRunner:
    """Runs services as ``inferd serve`` processes on this machine and reports every change of their
    state to ``on_change(service_id, change)`` (from the event loop; it should not block).

    ``policy`` says when to restart and when to give up; ``poll_interval`` how often a running server
    is looked at; a service's log keeps ``log_backups`` copies of ``log_max_bytes`` beside itself.
    ``python`` runs the servers (``python -m inferd serve``).
    """

    def __init__(
        self,
        on_change: OnChange,
        *,
        policy: RestartPolicy | None = None,
        poll_interval: float = 0.2,
        log_max_bytes: int = 10 * MIB,
        log_backups: int = 2,
        python: str = sys.executable,
    ) -> None:
        self.on_change = on_change
        self.policy = policy or RestartPolicy()
        self.poll_interval = poll_interval
        self.log_max_bytes = log_max_bytes
        self.log_backups = log_backups
        self.python = python
        self._services: dict[str, _Service] = {}
        self._waiters: list[tuple[str, frozenset[ServiceState], asyncio.Future[StateChange]]] = []

    # ---- what callers see

    def service_ids(self) -> list[str]:
        return list(self._services)

    def status(self, service_id: str) -> StateChange:
        return self._get(service_id).change()

    def logs(self, service_id: str, lines: int = 100) -> list[str]:
        """The last ``lines`` lines of the service's log (its server's output and the runner's notes)."""
        return self._get(service_id).log.tail(lines)

    def follow(self, service_id: str) -> AsyncIterator[str]:
        """Every line its log gets from now on (``inferd logs API``)."""
        return self._get(service_id).log.follow()

    async def wait_for(
        self, service_id: str, *states: ServiceState, timeout: float | None = None
    ) -> StateChange:
        """The service's state once it is one of ``states`` (TimeoutError after ``timeout`` s)."""
        service = self._get(service_id)
        if service.state in states:
            return service.change()
        future: asyncio.Future[StateChange] = asyncio.get_running_loop().create_future()
        waiter = (service_id, frozenset(states), future)
        self._waiters.append(waiter)
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            self._waiters.remove(waiter)

    # ---- starting, adopting, stopping

    async def start(self, spec: ServiceSpec) -> StateChange:
        """Start serving ``spec``: ``starting`` now, ``running`` once its server is ready (reported
        through ``on_change``). Conflict if the service is active already."""
        service = self._new(spec)
        self._set(service, ServiceState.STARTING)
        service.task = asyncio.create_task(self._supervise(service), name=f"service {spec.service_id}")
        return service.change()

    async def adopt(
        self, spec: ServiceSpec, pid: int | None, port: int | None, restarts: int = 0
    ) -> StateChange:
        """Take over a service an earlier control process recorded as running on ``pid`` and ``port``:
        watched again if that process still leads its session and answers on the port, else started
        again on the port (after ending the session of a server that does not answer)."""
        service = self._new(spec, port, restarts)
        if pid is not None and port is not None and leads_server(pid) and await answers(port):
            service.adopted, service.pid = identity(pid), pid
            service.log.note(f"adopted process {pid} serving on port {port}")
            self._set(service, ServiceState.RUNNING)
        else:
            if pid is not None and leads_server(pid):
                service.log.note(f"process {pid} does not answer on port {port}; ending its session")
                ended = identity(pid)
                await asyncio.to_thread(end_session, pid, 5.0, lambda: not running(ended))
            service.log.note(f"process {pid} is not serving any more; starting the service again")
            service.restarts += 1
            self._set(service, ServiceState.STARTING)
        service.task = asyncio.create_task(self._supervise(service), name=f"service {spec.service_id}")
        return service.change()

    async def stop(self, service_id: str, grace: float = 30.0) -> StateChange:
        """``stopping``: SIGTERM to its server, which drains its in-flight requests, up to ``grace``
        seconds, then SIGKILL for what is left of its session; ``stopped``."""
        service = self._get(service_id)
        if service.state == ServiceState.STOPPED:
            return service.change()
        self._set(service, ServiceState.STOPPING)
        task, service.task = service.task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if service.pid is not None:
            service.log.note(f"stopping (grace {grace:g} s)")
            await asyncio.to_thread(self._end, service, grace)
        self._set(service, ServiceState.STOPPED, pid=None, reason="")
        return service.change()

    async def aclose(self, grace: float = 30.0) -> None:
        """Stop every service, side by side."""
        active = [sid for sid, service in self._services.items() if service.state in ACTIVE]
        await asyncio.gather(*(self.stop(sid, grace) for sid in active))

    def close(self, grace: float = 30.0) -> None:
        """Stop every service without an event loop (at exit, after the loop has ended): SIGTERM to
        all at once, ``grace`` seconds shared by all, then SIGKILL."""
        active = [service for service in self._services.values() if service.state in ACTIVE]
        for service in active:
            if service.task is not None:
                with contextlib.suppress(RuntimeError):  # its loop may be closed already
                    service.task.cancel()
                service.task = None
            self._set(service, ServiceState.STOPPING)
            if service.pid is not None and not service.ended():
                with contextlib.suppress(OSError):
                    os.killpg(service.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for service in active:
            if service.pid is not None:
                self._end(service, max(0.0, deadline - time.monotonic()), terminate=False)
            self._set(service, ServiceState.STOPPED, pid=None, reason="")

    def detach(self) -> None:
        """Stop watching every service and forget it, leaving its server running for the next
        control process to `adopt` (an upgrade of the control process). Call it from the runner's
        event loop."""
        for service in self._services.values():
            if service.task is not None:
                service.task.cancel()
            if service.child is not None:  # reaped when it ends, as a new parent would
                threading.Thread(target=service.child.wait, name="inferd-detached", daemon=True).start()
        self._services.clear()

    # ---- supervision

    async def _supervise(self, service: _Service) -> None:
        policy = self.policy
        failed_starts = 0
        try:
            while True:
                if service.child is None and service.adopted is None:
                    failure = await self._start_once(service)
                    if failure is not None:
                        failed_starts += 1
                        if failure.final:
                            self._fail(service, failure.reason)
                            return
                        if failed_starts >= policy.start_attempts:
                            self._fail(service, f"failed to start {failed_starts} times: {failure.reason}")
                            return
                        await self._again(service, failure.reason, policy.delay(failed_starts))
                        continue
                    failed_starts = 0
                    self._set(service, ServiceState.RUNNING, reason="")
                how = await self._watch(service)
                now = time.monotonic()
                service.crashes = [at for at in service.crashes if now - at < policy.window] + [now]
                reason = f"{how} while running: {quote(service.log.tail(20))}"
                if len(service.crashes) >= policy.max_crashes:
                    crashes = len(service.crashes)
                    self._fail(service, f"crashed {crashes} times within {policy.window:g} s; last {reason}")
                    return
                await self._again(service, reason, policy.delay(len(service.crashes)))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug here must not leave a server unwatched
            logger.exception("supervising service %s failed", service.spec.service_id)
            await asyncio.to_thread(self._end, service, 0.0)
            self._fail(service, f"supervision failed: {exc}")

    async def _start_once(self, service: _Service) -> _Failure | None:
        """Start its server and wait for the ready line; None once ready, else why it failed."""
        spec = service.spec
        command = self._command(service)
        service.log.note(f"starting in {spec.folder}: {shlex.join(command)}")
        reader = service.log.reader()
        try:
            service.child = service.log.spawn(command, spec.folder, spec.environment)
        except OSError as exc:
            return _Failure(f"cannot start inferd serve in {spec.folder}: {exc}", final=True)
        self._set(service, service.state, pid=service.child.pid)
        seen: deque[str] = deque(maxlen=50)
        deadline = time.monotonic() + self.policy.start_timeout
        while True:
            ended = service.ended()  # before reading: every line written before the exit is read
            for line in reader.read_lines():
                seen.append(line)
                ready = READY.search(line)
                if ready and not ended:
                    service.port = int(ready["port"])
                    service.grpc_port = int(ready["grpc"]) if ready["grpc"] else None
                    return None
            if ended or time.monotonic() > deadline:
                seen.append(reader.partial.decode("utf-8", "replace"))
                how = await asyncio.to_thread(self._end, service, 0.0)
                text = quote(seen)
                if not ended:
                    return _Failure(f"not ready within {self.policy.start_timeout:g} s: {text}")
                return _Failure(f"{how} before it was ready: {text}", final="cannot listen on" in text)
            await asyncio.sleep(_READY_POLL)

    async def _watch(self, service: _Service) -> str:
        """Until its server exits (rotating its log meanwhile); how it exited, its session ended."""
        rotate_at = 0.0
        while not service.ended():
            if time.monotonic() >= rotate_at:
                await asyncio.to_thread(service.log.rotate_if_full)
                rotate_at = time.monotonic() + _ROTATE_EVERY
            await asyncio.sleep(self.poll_interval)
        return await asyncio.to_thread(self._end, service, 0.0)

    async def _again(self, service: _Service, reason: str, delay: float) -> None:
        """Back off for ``delay`` seconds (``starting``, the reason shown), then count a restart."""
        reason = f"{reason}; starting again in {delay:g} s"
        service.log.note(reason)
        self._set(service, ServiceState.STARTING, pid=None, reason=reason)
        await asyncio.sleep(delay)
        service.restarts += 1

    def _end(self, service: _Service, grace: float, *, terminate: bool = True) -> str:
        """End its server's session (blocking) and reap it; how it exited."""
        child, pid = service.child, service.pid
        if pid is None:
            return describe_exit(None)
        end_session(pid, grace, service.ended, terminate=terminate)
        code = None
        if child is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = child.wait(timeout=5)
        service.child = service.adopted = None
        return describe_exit(code)

    def _command(self, service: _Service) -> list[str]:
        spec = service.spec
        command = [self.python, "-m", "inferd", "serve", spec.target, "--host", "127.0.0.1"]
        command += ["--port", str(service.port or 0)]
        if spec.engine == "ray" and spec.autoscale is not None and spec.autoscale[0] != spec.autoscale[1]:
            low, high = spec.autoscale  # Ray Serve's autoscaler, on ongoing requests per replica
            command += ["--engine", "ray", "--autoscale", f"{low}:{high}"]
            command += ["--ray-target-ongoing-requests", f"{spec.target_concurrency:g}"]
        elif spec.engine == "ray":  # Ray's proxy serves HTTP; replicas instead of worker processes
            command += ["--engine", "ray", "--replicas", str(spec.workers)]
        else:
            command += ["--grpc-port", str(service.grpc_port or 0), "--workers", str(spec.workers)]
        if spec.engine == "ray":
            command += self._ray_application(spec)
        if spec.dialect != "auto":
            command += ["--dialect", spec.dialect]
        return command

    @staticmethod
    def _ray_application(spec: ServiceSpec) -> list[str]:
        """Its own Ray Serve application; on a shared cluster (``INFERD_RAY_ADDRESS`` in its
        environment or the runner's) at its own route prefix too, its port forwarding there."""
        application = ["--ray-app-name", spec.ray_application]
        if spec.environment.get(RAY_ADDRESS, os.environ.get(RAY_ADDRESS)):
            application += ["--ray-route-prefix", f"/{spec.ray_application}"]
        return application

    # ---- state

    def _new(self, spec: ServiceSpec, port: int | None = None, restarts: int = 0) -> _Service:
        current = self._services.get(spec.service_id)
        if current is not None and current.state in ACTIVE:
            raise Conflict(f"service {spec.service_id} is {current.state.value} already")
        log = ServiceLog(spec.log_dir / f"{spec.service_id}.log", self.log_max_bytes, self.log_backups)
        service = _Service(
            spec, log, port if port is not None else spec.port, spec.grpc_port, restarts=restarts
        )
        self._services[spec.service_id] = service
        return service

    def _get(self, service_id: str) -> _Service:
        try:
            return self._services[service_id]
        except KeyError:
            raise NotFound(f"no service {service_id} on this runner") from None

    def _fail(self, service: _Service, reason: str) -> None:
        service.log.note(f"failed: {reason}")
        self._set(service, ServiceState.FAILED, pid=None, reason=reason)

    def _set(self, service: _Service, state: ServiceState, **values: object) -> None:
        service.state = state
        for name, value in values.items():
            setattr(service, name, value)
        change = service.change()
        try:
            self.on_change(service.spec.service_id, change)
        except Exception:
            logger.exception("on_change failed for service %s", service.spec.service_id)
        for sid, states, future in self._waiters:
            if sid == service.spec.service_id and state in states and not future.done():
                with contextlib.suppress(RuntimeError):  # a loop closed under a sync close()
                    future.set_result(change)
