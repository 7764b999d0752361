"""Repository loads and unloads shared by the worker processes of one server.

A V2 repository call (load, unload) reaches one worker; the others learn of it here: the worker that
answered records the call in a small JSON file the supervisor made for this run (its path in
``INFERD_SHARED_CONTROL``), and every worker applies the calls recorded since it last looked, one
started later (in place of a lost one) all of them. The file is replaced atomically under a lock, so a
reader never sees half of it and two workers recording at once both count.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

#: The variable naming the file, set by the supervisor for the workers it starts.
VARIABLE = "INFERD_SHARED_CONTROL"

Operation = Literal["load", "unload"]


class SharedControl:
    """The load and unload calls of one server run, in the order they were answered."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen = 0

    @classmethod
    def from_environment(cls) -> SharedControl | None:
        found = os.environ.get(VARIABLE)
        return cls(Path(found)) if found else None

    def record(self, name: str, operation: Operation) -> None:
        """Add a call this worker answered (and mark it seen here: it is applied already)."""
        with self._locked():
            state = self._read()
            state["seq"] += 1
            state["models"][name] = [operation, state["seq"]]
            temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
            temporary.write_text(json.dumps(state))
            os.replace(temporary, self.path)
        self.seen = max(self.seen, state["seq"])

    def news(self) -> Iterator[tuple[str, Operation]]:
        """The calls recorded since this worker last looked, oldest first, each model's last one."""
        state = self._read()
        if state["seq"] <= self.seen:
            return
        fresh = sorted(
            (seq, name, operation) for name, (operation, seq) in state["models"].items() if seq > self.seen
        )
        self.seen = state["seq"]
        for _, name, operation in fresh:
            yield name, operation

    def _read(self) -> dict[str, Any]:
        try:
            found: dict[str, Any] = json.loads(self.path.read_text())
            return found
        except FileNotFoundError:
            return {"seq": 0, "models": {}}

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
