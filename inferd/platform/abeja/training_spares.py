"""Spare launchers for ABEJA training jobs: a job's Python started ahead, so that ``create-job``
gets its handler running in about the time a request takes, not a Python's start-up (issue 39: a
job's start-up at most 1.5x a plain ``python -c`` of its handler; bench/training_startup.py).

One spare per Python that has run a job (none before the first job: a platform without training
has no such process): ``training_entry.py --spare`` in a session of its own, idle on a read of its
stdin. A job takes it by writing one JSON line (its folder, environment, log, handler): the spare
changes into that folder, replaces its environment with the job's, points its output at the job's
log and runs the handler, exactly as a launcher started for the job would; a new spare is started for
the next job. What the spare cannot take on after its start falls back to a fresh process: an
environment that sets a variable read when an interpreter starts (``PYTHON*``, ``LD_*``) or differs
from the spare's in one. A spare whose control process is gone reads the end of its stdin and exits;
`close` kills the idle ones.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path

#: Variables read when an interpreter (or its dynamic loader) starts: a job setting one to something
#: else than the spare started with gets a fresh process.
_AT_START = ("PYTHON", "LD_")


class Spares:
    """The idle spare of each Python, started in ``folder`` with the environment jobs have before
    their own variables (``base``)."""

    def __init__(self, entry: Path, folder: Path) -> None:
        self.entry, self.folder = entry, folder
        self._idle: dict[str, tuple[subprocess.Popen[bytes], dict[str, str]]] = {}

    def take(
        self, python: str, environment: Mapping[str, str], cwd: Path, log: Path, handler: str
    ) -> subprocess.Popen[bytes] | None:
        """The idle spare of ``python`` made this job's process, or None (none is idle, it died, or
        the job's environment needs a fresh start)."""
        found = self._idle.pop(python, None)
        if found is None:
            return None
        process, started_with = found
        if process.poll() is not None or not _fits(environment, started_with):
            _end(process)
            return None
        job = {"cwd": str(cwd), "environment": dict(environment), "log": str(log), "handler": handler}
        try:
            assert process.stdin is not None
            process.stdin.write(json.dumps(job).encode() + b"\n")
            process.stdin.close()
        except (OSError, ValueError):
            _end(process)
            return None
        return process

    def prepare(self, python: str, base: Mapping[str, str]) -> None:
        """Start the spare of ``python`` unless one is idle (OSError when it cannot start)."""
        if python in self._idle and self._idle[python][0].poll() is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        process = subprocess.Popen(
            [python, str(self.entry), "--spare"],
            cwd=self.folder,
            env=dict(base),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._idle[python] = (process, dict(base))

    def close(self) -> None:
        """End the idle spares."""
        for process, _ in self._idle.values():
            _end(process)
        self._idle.clear()


def _fits(environment: Mapping[str, str], started_with: Mapping[str, str]) -> bool:
    keys = {k for k in (*environment, *started_with) if k.startswith(_AT_START)}
    return all(environment.get(k) == started_with.get(k) for k in keys)


def _end(process: subprocess.Popen[bytes]) -> None:
    process.kill()
    process.wait()
    if process.stdin is not None and not process.stdin.closed:
        try:
            process.stdin.close()
        except OSError:
            pass
