"""The open files limit of a server process, and how many connections fit under it.

Every connection is a file descriptor. Many systems start processes with a soft ``RLIMIT_NOFILE`` of
1024 while allowing far more (the hard limit); past the soft one, accepting a connection, opening a
model file or starting a thread fails for every request at once. So a server process raises its soft
limit to the hard one when it starts, and keeps ``max_connections`` below what is left once the
server's own files are counted.
"""

from __future__ import annotations

import logging

logger = logging.getLogger("inferd.engine")
#: Descriptors kept for the server's own use besides client connections: the interpreter, the
#: event loop, listening sockets, gRPC, model files, worker pipes, logs.
RESERVED = 128


def raise_open_files_limit() -> int | None:
    """Raise this process's soft open files limit to its hard limit; returns the soft limit now in
    force (None: unlimited, or no such limit on this platform). Children inherit it."""
    try:
        import resource
    except ImportError:  # Windows has no rlimits
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as exc:  # macOS refuses an unlimited soft limit
            logger.debug("open files limit kept at %s (hard %s): %s", soft, hard, exc)
        else:
            logger.debug("open files limit raised from %s to %s", soft, hard)
            soft = hard
    return None if soft == resource.RLIM_INFINITY else soft


def connection_budget(max_connections: int, open_files: int | None) -> int:
    """``max_connections``, lowered (with a warning) when ``open_files`` cannot hold that many
    connections besides the `RESERVED` descriptors."""
    if open_files is None or max_connections + RESERVED <= open_files:
        return max_connections
    budget = max(1, open_files - RESERVED)
    logger.warning(
        "max_connections lowered from %d to %d: the open files limit is %d; raise it (ulimit -n) to "
        "serve more connections",
        max_connections,
        budget,
        open_files,
    )
    return budget
