"""THE table from inferd's typed errors to an HTTP status and a gRPC code, looked up along the MRO.

Every REST room and every gRPC servicer answers errors through `status_of` and `error_body`, so the
same failure gets the same status and message whichever way the client came in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from inferd.core import errors
from inferd.protocols.grpc_status import status_code


@dataclass(frozen=True)
class Status:
    """An HTTP status and a gRPC code, the latter by name: grpcio is loaded only by what needs it (a
    server started with ``--no-grpc`` never loads grpc and protobuf, and the native gRPC server no
    grpc, about 8 MiB)."""

    http: int
    grpc_name: str

    @property
    def grpc(self) -> Any:
        """The gRPC code: ``grpc.StatusCode``'s when grpcio is loaded (`grpc_status.status_code`)."""
        return status_code(self.grpc_name)


STATUSES: dict[type[BaseException], Status] = {
    errors.PayloadTooLarge: Status(413, "RESOURCE_EXHAUSTED"),
    errors.HeadersTooLarge: Status(431, "RESOURCE_EXHAUSTED"),
    errors.ClientTimeout: Status(408, "DEADLINE_EXCEEDED"),
    errors.InvalidInput: Status(400, "INVALID_ARGUMENT"),
    errors.NotFound: Status(404, "NOT_FOUND"),
    errors.PreconditionFailed: Status(412, "FAILED_PRECONDITION"),
    errors.Conflict: Status(409, "FAILED_PRECONDITION"),
    errors.ModelNotReady: Status(503, "UNAVAILABLE"),
    errors.StoredObjectMissing: Status(404, "NOT_FOUND"),
    errors.StorageAccessDenied: Status(403, "PERMISSION_DENIED"),
    errors.StorageUnavailable: Status(502, "UNAVAILABLE"),
    errors.ModelLoadError: Status(400, "FAILED_PRECONDITION"),
    errors.TargetError: Status(400, "INVALID_ARGUMENT"),
    errors.TooManyFailures: Status(429, "RESOURCE_EXHAUSTED"),
    errors.RetryLater: Status(503, "UNAVAILABLE"),
    errors.RequestTimeout: Status(504, "DEADLINE_EXCEEDED"),
    errors.Unauthenticated: Status(401, "UNAUTHENTICATED"),
    errors.Forbidden: Status(403, "PERMISSION_DENIED"),
    errors.InferenceFailed: Status(500, "INTERNAL"),
    errors.BadGateway: Status(502, "UNAVAILABLE"),
    errors.InferdError: Status(500, "INTERNAL"),
}
INTERNAL = Status(500, "INTERNAL")
INTERNAL_MESSAGE = "internal server error; see the server log"
TRACEBACK = "Traceback (most recent call last)"
#: An absolute path of two or more components (POSIX or Windows), not part of a URL or a longer word.
ABSOLUTE_PATH = re.compile(r"""(?<![\w.:/\\])(?:[A-Za-z]:)?(?:[/\\][^\s'"/\\:,;()\[\]]+){2,}[/\\]?""")
HIDDEN_PATH = "<path>"
#: What ``str()`` puts for an object without a text of its own (``<_io.BytesIO object at 0x7f..>``,
#: as in Pillow's "cannot identify image file ..."): a memory address, of no use to a client.
OBJECT_ADDRESS = re.compile(r"\s*<[^<>]*\bat 0x[0-9A-Fa-f]+>")


def status_of(exc: BaseException) -> Status:
    """The status of the nearest class in ``exc``'s MRO that the table knows; unknown errors are 500."""
    for cls in type(exc).__mro__:
        status = STATUSES.get(cls)
        if status is not None:
            return status
    return INTERNAL


def error_message(exc: BaseException) -> str:
    """What the client may read: the typed error's message (without object addresses), never
    internals of anything else."""
    if isinstance(exc, errors.InferdError):
        return without_addresses(exc.message)
    return INTERNAL_MESSAGE


def without_addresses(text: str) -> str:
    """``text`` without the ``<... at 0x...>`` of objects a library put in its exception's text."""
    return OBJECT_ADDRESS.sub("", text) if " at 0x" in text else text


def scrubbed(text: str) -> str:
    """A message of model code made fit for a 5xx body: no traceback, no absolute file paths (each
    becomes ``<path>``), no object addresses. For dialects whose platforms put the exception's text
    in the body (Seldon's ``info``, ABEJA's ``error_description``): clients keep the gist, the server
    keeps its layout."""
    text = text.split(TRACEBACK, 1)[0]
    return ABSOLUTE_PATH.sub(HIDDEN_PATH, without_addresses(text)).strip()


def error_body(exc: BaseException) -> dict[str, object]:
    """``{"error": message}``, and what a refused budget names (`BudgetExceeded.details`)."""
    body: dict[str, object] = {"error": error_message(exc)}
    if isinstance(exc, errors.BudgetExceeded):
        body.update(exc.details)
    return body


def error_headers(exc: BaseException) -> dict[str, str]:
    """The HTTP headers an error answer carries whatever its body: when to retry a shed request
    (whole seconds, at least 1), how to authenticate."""
    if isinstance(exc, errors.RetryLater):
        return {"Retry-After": str(max(1, round(exc.retry_after)))}
    if isinstance(exc, errors.Unauthenticated):
        return {"WWW-Authenticate": "Bearer"}
    return {}
