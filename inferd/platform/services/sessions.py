"""The processes of one service: `inferd serve` leads a session of its own (``start_new_session``),
so everything it starts (workers, model processes, training jobs in groups of their own) is found by
that session id and ended with it.

Signals go to the members found in ``/proc`` by session, not to a process id that may have been
given to another process since: our own server is not reaped before its session is ended (its
zombie keeps its id), and a session id is only ever the id of a live session leader or of members
it left behind. Without ``/proc`` the leader's process group is signalled instead.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from inferd.core.processes import alive

SIGKILL: int = getattr(signal, "SIGKILL", signal.SIGTERM)
_PROC = Path("/proc")


def members(session: int) -> list[int] | None:
    """The live processes of ``session`` (zombies are not counted); None without ``/proc``."""
    if not (_PROC / "self" / "stat").exists():
        return None
    found = []
    for stat in _PROC.glob("[0-9]*/stat"):
        try:
            fields = stat.read_bytes().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # after the command name: state, ppid, pgrp, session
        if len(fields) > 3 and int(fields[3]) == session and fields[0] not in (b"Z", b"X"):
            found.append(int(stat.parent.name))
    return found


def signal_session(session: int, signum: int) -> None:
    """Send ``signum`` to every process of ``session``."""
    pids = members(session)
    if pids is None:
        with contextlib.suppress(OSError):
            os.killpg(session, signum)
        return
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)


def end_session(
    leader: int,
    grace: float,
    ended: Callable[[], bool],
    *,
    terminate: bool = True,
    after_kill: float = 10.0,
) -> None:
    """SIGTERM to the leader's process group (an inferd server drains its in-flight requests; a
    second SIGTERM would make it give up, so ``terminate=False`` when it was sent already), up to
    ``grace`` seconds for the whole session to end, then SIGKILL to what is left and up to
    ``after_kill`` seconds for it to go. ``ended()`` says whether the leader has exited (without
    reaping it when it is our child)."""

    def gone() -> bool:
        return ended() and not members(leader)

    if terminate and not gone():
        with contextlib.suppress(OSError):
            os.killpg(leader, signal.SIGTERM)
    _wait(gone, grace)
    if not gone():
        signal_session(leader, SIGKILL)
        _wait(gone, after_kill)


def child_ended(pid: int) -> bool:
    """Whether our child ``pid`` has exited, leaving it unreaped (its id stays taken)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def leads_server(pid: int) -> bool:
    """Whether ``pid`` runs and leads a session of its own running ``inferd serve``: what a service
    recorded with that id would be, rather than another process given the id since."""
    try:
        if os.getsid(pid) != pid:
            return False
    except OSError:
        return False
    try:
        command = (_PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return not _PROC.exists()  # nothing more to check here
    return b"inferd" in command and b"serve" in command


def running(process_identity: str) -> bool:
    """Whether the process an `identity` names still runs: a zombie (ended, not yet reaped by its
    parent) does not."""
    if not alive(process_identity):
        return False
    pid = process_identity.split(":", 1)[0]
    try:
        state = (_PROC / pid / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in (b"Z", b"X")


async def answers(port: int, timeout: float = 2.0) -> bool:
    """Whether a server on the loopback ``port`` says it is live (``GET /v2/health/live``)."""
    try:
        async with httpx.AsyncClient(timeout=timeout, trust_env=False) as client:  # loopback: no proxy
            response = await client.get(f"http://127.0.0.1:{port}/v2/health/live")
    except httpx.HTTPError:
        return False
    return response.status_code == 200


def describe_exit(code: int | None) -> str:
    """``exited with code 1``, ``was killed by SIGKILL``, or ``exited`` when the code is unknown."""
    if code is None:
        return "exited"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _wait(done: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        time.sleep(0.05)
