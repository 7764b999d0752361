"""Starlette exception handlers: typed errors → the status table → a JSON body.

4xx bodies say what was wrong; 5xx bodies say nothing internal, and the traceback goes to the log.
"""

from __future__ import annotations

import logging

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from inferd.core.errors import InferdError
from inferd.protocols.json import JSONResponse
from inferd.protocols.status import error_body, error_headers, status_of

logger = logging.getLogger("inferd.server")


def error_response(exc: BaseException) -> Response:
    return JSONResponse(error_body(exc), status_code=status_of(exc).http, headers=error_headers(exc))


async def handle_inferd_error(request: Request, exc: Exception) -> Response:
    return error_response(exc)


async def handle_http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code in (204, 304):
        return Response(status_code=exc.status_code, headers=exc.headers)
    return JSONResponse({"error": exc.detail}, status_code=exc.status_code, headers=exc.headers)


async def handle_disconnect(request: Request, exc: Exception) -> Response:
    """The client left while its body was read: no one reads an answer, and it is no server error.
    499 is the status proxies log for it ("client closed request")."""
    logger.debug("client left during %s %s", request.method, request.url.path)
    return Response(status_code=499)


def log_unexpected(method: str, path: str, exc: BaseException) -> None:
    """The one log line (with the traceback) of an error no handler took, answered 500."""
    logger.error("unhandled error on %s %s", method, path, exc_info=exc)


async def handle_unexpected(request: Request, exc: Exception) -> Response:
    log_unexpected(request.method, request.url.path, exc)
    return error_response(exc)


#: The errors answered where they are raised; any other reaches the server error middleware.
TYPED_ERROR_HANDLERS = {
    InferdError: handle_inferd_error,
    HTTPException: handle_http_exception,
    ClientDisconnect: handle_disconnect,
}
#: Starlette's table: its server error middleware takes the handler of ``Exception`` (a 500). In
#: inferd's app `RequestContext` answers those first: Starlette's middleware re-raises after its
#: handler, and uvicorn would log the same traceback a second time.
EXCEPTION_HANDLERS = {**TYPED_ERROR_HANDLERS, Exception: handle_unexpected}
