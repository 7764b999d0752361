"""gRPC status codes without grpcio: inferd's own gRPC server (`inferd.server.grpc_native`) sends a
call's status as a number and a name, so a process serving V2 on it need not load grpcio (about
8 MiB of a worker's memory, issue 26). grpc.aio's context takes only grpcio's own enum, so
`status_code` answers with that one whenever grpcio is loaded (a grpc.aio server, a dialect's
generated gRPC code, the interceptors): both enums carry the same names and values."""

from __future__ import annotations

import enum
import sys
from typing import Any


class StatusCode(enum.Enum):
    """``grpc.StatusCode``'s members with the same values: (the code on the wire, its description)."""

    OK = (0, "ok")
    CANCELLED = (1, "cancelled")
    UNKNOWN = (2, "unknown")
    INVALID_ARGUMENT = (3, "invalid argument")
    DEADLINE_EXCEEDED = (4, "deadline exceeded")
    NOT_FOUND = (5, "not found")
    ALREADY_EXISTS = (6, "already exists")
    PERMISSION_DENIED = (7, "permission denied")
    RESOURCE_EXHAUSTED = (8, "resource exhausted")
    FAILED_PRECONDITION = (9, "failed precondition")
    ABORTED = (10, "aborted")
    OUT_OF_RANGE = (11, "out of range")
    UNIMPLEMENTED = (12, "unimplemented")
    INTERNAL = (13, "internal")
    UNAVAILABLE = (14, "unavailable")
    DATA_LOSS = (15, "data loss")
    UNAUTHENTICATED = (16, "unauthenticated")


def status_code(name: str) -> Any:
    """The code called ``name``: ``grpc.StatusCode``'s when grpcio is loaded, else `StatusCode`'s."""
    grpc = sys.modules.get("grpc")
    codes = StatusCode if grpc is None else grpc.StatusCode
    return codes[name]
