"""Real ``inferd serve`` processes supervised by `LocalRunner`: started, answering, restarted after a
crash on the same port, failing with a reason, stopped with nothing left, re-adopted."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from pathlib import Path

import httpx
import pytest

from inferd.core.errors import Conflict
from inferd.platform.records import ServiceState
from inferd.platform.services import LocalRunner, StateChange
from inferd.platform.services.sessions import members
from inferd.platform.services.spec import RestartPolicy
from tests.platform.services.conftest import BROKEN, CRASHING, POLICY, Changes, project, spec_of

RUNNING, FAILED, STOPPED = ServiceState.RUNNING, ServiceState.FAILED, ServiceState.STOPPED
REQUEST = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [2], "data": [1.5, 2.5]}]}


async def infer(port: int | None) -> list[float]:
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(f"http://127.0.0.1:{port}/v2/models/echo/infer", json=REQUEST)
    assert response.status_code == 200, response.text
    data: list[float] = response.json()["outputs"][0]["data"]
    return data


async def restarted(runner: LocalRunner, service_id: str, restarts: int) -> StateChange:
    """The service once it runs again after its ``restarts``-th restart."""
    for _ in range(600):
        change = runner.status(service_id)
        if change.state == RUNNING and change.restarts >= restarts:
            return change
        assert change.state != FAILED, change.reason
        await asyncio.sleep(0.05)
    raise AssertionError(f"not restarted: {runner.status(service_id)}")


def gone(session: int) -> bool:
    return not members(session)


async def test_serves_logs_and_restarts_after_a_kill_on_the_same_port(
    runner: LocalRunner, changes: Changes, echo: Path, tmp_path: Path
) -> None:
    started = await runner.start(spec_of(tmp_path, echo))
    assert started.state == ServiceState.STARTING
    first = await runner.wait_for("svc-echo", RUNNING, FAILED, timeout=60)
    assert first.state == RUNNING, first.reason
    assert first.port and first.pid and first.restarts == 0
    assert await infer(first.port) == [1.5, 2.5]
    lines = runner.logs("svc-echo")
    assert any(f"inferd ready: http://127.0.0.1:{first.port}" in line for line in lines)
    assert (tmp_path / "logs" / "svc-echo.log").exists()
    with pytest.raises(Conflict):
        await runner.start(spec_of(tmp_path, echo))

    following = runner.follow("svc-echo")
    os.kill(first.pid, signal.SIGKILL)
    second = await restarted(runner, "svc-echo", 1)
    assert second.restarts == 1 and second.port == first.port and second.pid != first.pid
    assert await infer(second.port) == [1.5, 2.5]
    assert changes.states("svc-echo") == [ServiceState.STARTING, RUNNING, ServiceState.STARTING, RUNNING]
    crash = next(c for sid, c in changes if c.state == ServiceState.STARTING and c.reason)
    assert "was killed by SIGKILL while running" in crash.reason
    new_lines = [await asyncio.wait_for(anext(following), 10) for _ in range(3)]
    assert any("SIGKILL" in line for line in new_lines)

    stopped = await runner.stop("svc-echo", grace=10)
    assert stopped.state == STOPPED and stopped.pid is None
    assert gone(second.pid or 0)
    assert changes.states("svc-echo")[-2:] == [ServiceState.STOPPING, STOPPED]
    with pytest.raises(httpx.ConnectError):
        await infer(second.port)


async def test_code_that_fails_to_load_fails_with_its_error(
    runner: LocalRunner, changes: Changes, tmp_path: Path
) -> None:
    broken = project(tmp_path, "broken", BROKEN)
    await runner.start(spec_of(tmp_path, broken, "svc-broken"))
    failed = await runner.wait_for("svc-broken", RUNNING, FAILED, timeout=60)
    assert failed.state == FAILED
    assert f"failed to start {POLICY.start_attempts} times" in failed.reason
    assert "before it was ready" in failed.reason
    assert "broken model code: cannot find weights.bin" in failed.reason
    assert failed.restarts == POLICY.start_attempts - 1 and failed.pid is None
    assert any("broken model code" in line for line in runner.logs("svc-broken"))
    assert (await runner.stop("svc-broken")).state == STOPPED


async def test_a_taken_port_fails_at_once_naming_the_port(
    runner: LocalRunner, echo: Path, tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        await runner.start(spec_of(tmp_path, echo, port=port))
        failed = await runner.wait_for("svc-echo", RUNNING, FAILED, timeout=60)
    assert failed.state == FAILED and failed.restarts == 0
    assert f"cannot listen on 127.0.0.1:{port}" in failed.reason
    assert failed.reason.startswith("exited with code 1 before it was ready")


async def test_a_service_crashing_in_a_loop_fails(changes: Changes, tmp_path: Path) -> None:
    crashing = project(tmp_path, "crashing", CRASHING)
    runner = LocalRunner(changes, policy=RestartPolicy(first_delay=0.1, max_crashes=2), poll_interval=0.05)
    try:
        await runner.start(spec_of(tmp_path, crashing, "svc-crashing"))
        for restarts in range(2):
            running = await restarted(runner, "svc-crashing", restarts)
            with pytest.raises(httpx.HTTPError):
                async with httpx.AsyncClient(timeout=30) as client:
                    await client.post(
                        f"http://127.0.0.1:{running.port}/v2/models/crashing/infer", json=REQUEST
                    )
        failed = await runner.wait_for("svc-crashing", FAILED, timeout=30)
    finally:
        await runner.aclose(grace=5)
    assert failed.reason.startswith("crashed 2 times within 60 s; last exited with code 3 while running")
    assert failed.restarts == 1
    assert changes.states("svc-crashing") == [
        ServiceState.STARTING,
        RUNNING,
        ServiceState.STARTING,
        RUNNING,
        FAILED,
    ]


async def test_close_stops_every_service_without_awaiting(
    changes: Changes, echo: Path, tmp_path: Path
) -> None:
    runner = LocalRunner(changes, policy=POLICY, poll_interval=0.05)
    await runner.start(spec_of(tmp_path, echo))
    running = await runner.wait_for("svc-echo", RUNNING, FAILED, timeout=60)
    assert running.state == RUNNING and running.pid is not None, running.reason
    runner.close(grace=10)
    assert runner.status("svc-echo").state == STOPPED
    assert gone(running.pid)
    assert changes.states("svc-echo")[-2:] == [ServiceState.STOPPING, STOPPED]


async def test_stopping_ends_every_process_of_the_service(
    runner: LocalRunner, echo: Path, tmp_path: Path
) -> None:
    await runner.start(spec_of(tmp_path, echo, workers=2))
    running = await runner.wait_for("svc-echo", RUNNING, FAILED, timeout=90)
    assert running.state == RUNNING, running.reason
    assert running.pid is not None
    assert len(members(running.pid) or []) >= 3  # the supervisor and its two workers
    await runner.stop("svc-echo", grace=10)
    assert gone(running.pid)


async def test_a_new_runner_adopts_a_live_server_and_restarts_it_after_a_crash(
    runner: LocalRunner, echo: Path, tmp_path: Path
) -> None:
    spec = spec_of(tmp_path, echo)
    await runner.start(spec)
    first = await runner.wait_for("svc-echo", RUNNING, FAILED, timeout=60)
    assert first.state == RUNNING and first.pid is not None, first.reason
    runner.detach()  # as if the control process had restarted

    changes = Changes()
    second = LocalRunner(changes, policy=POLICY, poll_interval=0.05)
    try:
        adopted = await second.adopt(spec, first.pid, first.port)
        assert adopted == StateChange(RUNNING, first.port, first.pid, "", 0)
        assert await infer(first.port) == [1.5, 2.5]
        assert any(f"adopted process {first.pid}" in line for line in second.logs("svc-echo"))

        os.kill(first.pid, signal.SIGKILL)
        again = await restarted(second, "svc-echo", 1)
        assert again.port == first.port and again.pid != first.pid
        assert await infer(again.port) == [1.5, 2.5]
        assert gone(first.pid)
    finally:
        await second.aclose(grace=10)
    assert again.pid is not None and gone(again.pid)

    # recorded as running, but its process is gone: started again on its port
    third = LocalRunner(Changes(), policy=POLICY, poll_interval=0.05)
    try:
        resumed = await third.adopt(spec, again.pid, again.port)
        assert resumed.state == ServiceState.STARTING and resumed.restarts == 1
        running = await third.wait_for("svc-echo", RUNNING, FAILED, timeout=60)
        assert running.state == RUNNING and running.port == again.port, running.reason
    finally:
        await third.aclose(grace=10)
