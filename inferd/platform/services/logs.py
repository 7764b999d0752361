"""A service's log: one file its server writes to directly, rotated by copy and truncate.

The server's stdout and stderr are the file itself (opened for appending), not a pipe through the
control process: a server outlives a restart of the control process without losing its output or
blocking on a full pipe, and a re-adopted server goes on writing where it did. Rotation is
``copytruncate`` (as logrotate does it): the file is copied to ``<name>.1`` (older copies shift to
``.2`` ...) and truncated, and the server's appends go on at the new end. Lines written between the
copy and the truncation are lost, a few bytes in 10 MiB at worst.

Lines the runner adds itself (starts, exits, restarts) begin with `NOTE`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

MIB = 1024 * 1024
NOTE = "[inferd platform] "
_BLOCK = 64 * 1024


class ServiceLog:
    """``path`` and at most ``backups`` older copies of it, each about ``max_bytes`` long."""

    def __init__(self, path: Path, max_bytes: int = 10 * MIB, backups: int = 2) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups

    def backup(self, number: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{number}")

    def open_for_server(self) -> BinaryIO:
        """The file to give a server as its stdout and stderr (appending, created if missing)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return open(self.path, "ab")

    def spawn(self, command: list[str], folder: Path, environment: dict[str, str]) -> subprocess.Popen[bytes]:
        """Start ``command`` in ``folder`` in a session of its own (so its whole tree can be ended),
        its output appended to this log and nothing on its stdin; OSError when it cannot start."""
        with self.open_for_server() as output:
            return subprocess.Popen(
                command,
                cwd=folder,
                env={"PYTHONUNBUFFERED": "1", **os.environ, **environment},
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def note(self, text: str) -> None:
        """Append a line of the runner's own, marked with `NOTE` and the time."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        with open(self.path, "a", encoding="utf-8") as log:
            log.write(f"{NOTE}{stamp} {text}\n")

    def size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def rotate_if_full(self) -> bool:
        """Rotate when the file has grown past ``max_bytes``; True if it was."""
        if self.size() <= self.max_bytes:
            return False
        self.rotate()
        return True

    def rotate(self) -> None:
        """Shift the copies (dropping the oldest), copy the file to ``.1`` and truncate it."""
        for number in range(self.backups - 1, 0, -1):
            if self.backup(number).exists():
                os.replace(self.backup(number), self.backup(number + 1))
        if self.backups > 0:
            shutil.copyfile(self.path, self.backup(1))
        os.truncate(self.path, 0)

    def tail(self, lines: int = 100) -> list[str]:
        """The last ``lines`` lines, reaching into the copies when the file holds fewer."""
        found: list[str] = []
        for path in [self.path, *(self.backup(n) for n in range(1, self.backups + 1))]:
            if len(found) >= lines:
                break
            found = _last_lines(path, lines - len(found)) + found
        return found[-lines:] if lines > 0 else []

    def reader(self) -> LogReader:
        """A reader of the lines written from now on."""
        return LogReader(self)

    def follow(self, interval: float = 0.2) -> AsyncIterator[str]:
        """Every line written from now (the call, not the first iteration) on, as it comes, until
        the caller stops iterating."""
        return _follow(self.reader(), interval)


class LogReader:
    """Reads a `ServiceLog` on from where it last stopped, across a rotation: when the file has
    shrunk, the rest of what it had read from is in the first copy."""

    def __init__(self, log: ServiceLog) -> None:
        self.log = log
        self.offset = log.size()
        self.partial = b""

    def read_lines(self) -> list[str]:
        """The complete lines written since the last call."""
        data = b""
        if self.log.size() < self.offset:  # rotated: finish what was read in the copy
            data += _read_from(self.log.backup(1), self.offset)
            self.offset = 0
        fresh = _read_from(self.log.path, self.offset)
        self.offset += len(fresh)
        *complete, self.partial = (self.partial + data + fresh).split(b"\n")
        return [line.decode("utf-8", "replace").rstrip("\r") for line in complete]


async def _follow(reader: LogReader, interval: float) -> AsyncIterator[str]:
    while True:
        for line in reader.read_lines():
            yield line
        await asyncio.sleep(interval)


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with open(path, "rb") as file:
            file.seek(offset)
            return file.read()
    except OSError:
        return b""


def _last_lines(path: Path, count: int) -> list[str]:
    """The last ``count`` complete lines of ``path``, read backwards a block at a time."""
    try:
        file = open(path, "rb")
    except OSError:
        return []
    with file:
        end = file.seek(0, os.SEEK_END)
        data, position = b"", end
        while position > 0 and data.count(b"\n") <= count:
            step = min(_BLOCK, position)
            position -= step
            file.seek(position)
            data = file.read(step) + data
    lines = data.decode("utf-8", "replace").splitlines()
    return lines[-count:] if count > 0 else []


def quote(lines: Iterable[str], most: int = 3) -> str:
    """What a log says about why its server ended: from the last ``error:`` line inferd printed (at
    most ``most`` lines), else the last line (a traceback's exception)."""
    kept = [line.strip() for line in lines if line.strip() and not line.startswith(NOTE)]
    if not kept:
        return "(no output)"
    for index in range(len(kept) - 1, max(-1, len(kept) - 12), -1):
        if kept[index].startswith("error:"):
            return " | ".join(kept[index : index + most])
    return kept[-1]
