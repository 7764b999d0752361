"""THE table from inferd's typed errors to an HTTP status and a gRPC code, looked up along the MRO.

Every REST room and every gRPC servicer answers errors through `status_of` and `error_body`, so the
same failure gets the same status and message whichever way the client came in.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from inferd.core import errors


@dataclass(frozen=True)
class Status:
    http: int
    grpc: grpc.StatusCode


STATUSES: dict[type[BaseException], Status] = {
    errors.PayloadTooLarge: Status(413, grpc.StatusCode.RESOURCE_EXHAUSTED),
    errors.InvalidInput: Status(400, grpc.StatusCode.INVALID_ARGUMENT),
    errors.ModelNotFound: Status(404, grpc.StatusCode.NOT_FOUND),
    errors.ModelNotReady: Status(503, grpc.StatusCode.UNAVAILABLE),
    errors.ModelLoadError: Status(400, grpc.StatusCode.FAILED_PRECONDITION),
    errors.TargetError: Status(400, grpc.StatusCode.INVALID_ARGUMENT),
    errors.RetryLater: Status(503, grpc.StatusCode.UNAVAILABLE),
    errors.InferenceFailed: Status(500, grpc.StatusCode.INTERNAL),
    errors.InferdError: Status(500, grpc.StatusCode.INTERNAL),
}
INTERNAL = Status(500, grpc.StatusCode.INTERNAL)
INTERNAL_MESSAGE = "internal server error; see the server log"


def status_of(exc: BaseException) -> Status:
    """The status of the nearest class in ``exc``'s MRO that the table knows; unknown errors are 500."""
    for cls in type(exc).__mro__:
        status = STATUSES.get(cls)
        if status is not None:
            return status
    return INTERNAL


def error_message(exc: BaseException) -> str:
    """What the client may read: the typed error's message, never internals of anything else."""
    if isinstance(exc, errors.InferdError):
        return exc.message
    return INTERNAL_MESSAGE


def error_body(exc: BaseException) -> dict[str, str]:
    return {"error": error_message(exc)}
