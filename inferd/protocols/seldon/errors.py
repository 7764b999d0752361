"""Seldon's error answers: one exception type with the HTTP status, ``info`` and ``reason`` of the body
``{"status":{"status":1,"info":…,"code":-1,"reason":…}}``, and the one table from an HTTP status to a
gRPC code (spec §7). Everything a Seldon route raises or catches becomes a `SeldonError` in
`as_seldon_error`.

seldon-core's own exceptions carry the same three fields, so they live here too: inferd's
``SeldonMicroserviceException`` and ``SeldonNotImplementedError`` (which the Seldon dialect's
``seldon_core.flask_utils`` stand-in gives user code), and `seldon_exception_fields`, which reads
them, seldon-core's or a look-alike's by duck typing.
"""

from __future__ import annotations

import logging
from typing import Any

import grpc

from inferd.core.errors import InferdError, InvalidInput
from inferd.protocols.status import scrubbed, status_of

logger = logging.getLogger("inferd.seldon")

BAD_DATA = "MICROSERVICE_BAD_DATA"
INTERNAL_ERROR = "MICROSERVICE_INTERNAL_ERROR"
BAD_METRIC = "MICROSERVICE_BAD_METRIC"
BAD_METADATA = "MICROSERVICE_BAD_METADATA"
BAD_PARAMETER = "MICROSERVICE_BAD_PARAMETER"

GRPC_CODES = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.NOT_FOUND,
    409: grpc.StatusCode.ALREADY_EXISTS,
    413: grpc.StatusCode.RESOURCE_EXHAUSTED,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    503: grpc.StatusCode.UNAVAILABLE,
    504: grpc.StatusCode.DEADLINE_EXCEEDED,
}


class SeldonMicroserviceException(Exception):
    """An error with the HTTP status and ``reason`` the client gets in Seldon's error body."""

    status_code = 400

    def __init__(
        self,
        message: str,
        status_code: int | None = None,
        payload: Any = None,
        reason: str = BAD_DATA,
    ) -> None:
        Exception.__init__(self)
        self.message = message
        if status_code is not None:
            self.status_code = status_code
        self.payload = payload
        self.reason = reason

    def to_dict(self) -> dict[str, Any]:
        return {"status": {"status": 1, "info": self.message, "code": -1, "reason": self.reason}}


class SeldonNotImplementedError(SeldonMicroserviceException):
    """Raised by `SeldonComponent`'s stubs: the server treats the method as absent."""

    status_code = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)


class SeldonError(Exception):
    """An answer in Seldon's error shape; ``not_implemented`` marks a method the user class lacks."""

    def __init__(
        self, info: str, status: int = 400, reason: str = BAD_DATA, not_implemented: bool = False
    ) -> None:
        super().__init__(info)
        self.info, self.status, self.reason = info, status, reason
        self.not_implemented = not_implemented

    def body(self) -> dict[str, Any]:
        return {"status": {"status": 1, "info": self.info, "code": -1, "reason": self.reason}}

    @property
    def grpc_code(self) -> grpc.StatusCode:
        if self.not_implemented:
            return grpc.StatusCode.UNIMPLEMENTED
        return GRPC_CODES.get(self.status, grpc.StatusCode.INTERNAL)


def as_seldon_error(exc: BaseException) -> SeldonError:
    """What the client of a Seldon route gets for ``exc``: Seldon exceptions keep their status and
    reason, inferd's errors get the status table's, anything else is a 500 with ``str(exc)`` (as
    Seldon); a 5xx ``info`` never carries a traceback or a file path (`scrubbed`)."""
    error = _as_seldon_error(exc)
    if error.status >= 500:
        error.info = scrubbed(error.info)
    return error


def _as_seldon_error(exc: BaseException) -> SeldonError:
    if isinstance(exc, SeldonError):
        return exc
    fields = seldon_exception_fields(exc)
    if fields is not None:
        status, message, reason = fields
        return SeldonError(message, status, reason, not_implemented=is_not_implemented(exc))
    if isinstance(exc, InferdError):  # the status table's status: 400, 413, 503, 504 ...
        return SeldonError(
            exc.message, status_of(exc).http, BAD_DATA if isinstance(exc, InvalidInput) else INTERNAL_ERROR
        )
    logger.error("Seldon component raised", exc_info=exc)
    return SeldonError(str(exc), 500, INTERNAL_ERROR)


def is_not_implemented(exc: BaseException) -> bool:
    """A ``SeldonNotImplementedError``, inferd's or seldon-core's: the method counts as absent."""
    return any(cls.__name__ == "SeldonNotImplementedError" for cls in type(exc).__mro__)


def seldon_exception_fields(exc: BaseException) -> tuple[int, str, str] | None:
    """(status, message, reason) of a Seldon exception, inferd's, seldon-core's or a look-alike."""
    if isinstance(exc, SeldonMicroserviceException):
        return exc.status_code, exc.message, exc.reason
    status, message = getattr(exc, "status_code", None), getattr(exc, "message", None)
    if isinstance(status, int) and isinstance(message, str) and hasattr(exc, "reason"):
        return status, message, str(getattr(exc, "reason", BAD_DATA))
    return None
