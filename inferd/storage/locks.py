"""flock(2) locks on files in the cache, which processes share: the kernel drops a lock when its
process dies, so a killed download never leaves the cache locked.

A lock file may be deleted by whoever holds it exclusively (eviction does, so lock files do not pile
up): a process that was waiting on the deleted file then holds a lock nobody else can see, so
`FileLock` checks after locking that its file is still the one at the path, and locks again if not.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class FileLock:
    """A shared or exclusive lock on one path, held until `release`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, shared: bool = False, blocking: bool = True) -> bool:
        """Lock the file (creating it); False if ``blocking`` is off and another holds it."""
        assert self._fd is None, f"{self.path} is locked already"
        mode = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if blocking else fcntl.LOCK_NB)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, mode)
            except BlockingIOError:
                os.close(fd)
                return False
            if self._still_there(fd):
                self._fd = fd
                return True
            os.close(fd)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        """Remove the lock file while holding it exclusively, then release it."""
        self.path.unlink(missing_ok=True)
        self.release()

    def _still_there(self, fd: int) -> bool:
        try:
            return os.stat(self.path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            return False
