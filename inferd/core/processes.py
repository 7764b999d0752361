"""Facts about processes that several rooms need: resident memory, open files, descendants, an
identity that outlives the process, and ending with the parent (`inferd.core.keeper` acts on them)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
MIB = 1024 * 1024


def rss_bytes(pid: int) -> int | None:
    """Resident memory of ``pid`` (Linux ``/proc``); None when it is gone or cannot be read here."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_SIZE
    except (OSError, IndexError, ValueError):
        return None


def descendants(pid: int) -> list[int]:
    """Every live process under ``pid`` (Linux ``/proc``): workers, model processes, jobs."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def open_fds(pid: int) -> int | None:
    """How many file descriptors ``pid`` holds open (Linux ``/proc``); None when it cannot be read."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def identity(pid: int | None = None) -> str:
    """``pid`` (this process by default) with its start time where ``/proc`` has it, so a record of
    a process is not mistaken for a later one that was given the same id."""
    pid = os.getpid() if pid is None else pid
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return f"{pid}:{int(fields[19])}"  # field 22, starttime, counted after the command name
    except (OSError, IndexError, ValueError):
        return str(pid)


def alive(process_identity: str) -> bool:
    """Whether the process an `identity` names still runs."""
    pid = int(process_identity.split(":", 1)[0])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive, but not ours unless the start time says so
        pass
    return ":" not in process_identity or identity(pid) == process_identity


def end_with_parent(end: Callable[[], None], interval: float = 0.5) -> None:
    """Call ``end`` (which should exit) from a daemon thread once this process's parent is gone.

    A child whose parent was killed (SIGKILL, a crash) would otherwise run on as an orphan; this
    works wherever ``getppid`` does, and still when the child's own main thread is stuck.
    """
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        end()

    threading.Thread(target=watch, name="inferd-parent-watch", daemon=True).start()
