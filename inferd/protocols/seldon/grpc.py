"""What every server of Seldon's gRPC services shares: a call counted in the request metrics, and an
error answered as Seldon's status code with its message (spec §10), where Seldon sent UNKNOWN."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from inferd.core import metrics as core_metrics
from inferd.protocols.seldon.errors import SeldonError, as_seldon_error

PROTOCOL = "seldon-grpc"
Context = Any  # grpc.aio.ServicerContext; grpcio ships no type hints


async def counted_call(
    counted: core_metrics.Series, context: Context, answer: Callable[[], Awaitable[Any]]
) -> Any:
    """``answer()``, counted in the request metrics; an error aborts the call with its status."""
    started, ok = counted.begin(), False
    try:
        reply = await answer()
        ok = True
        return reply
    except Exception as exc:
        await abort(context, exc)
    finally:
        counted.end(started, ok)


async def abort(context: Context, exc: BaseException) -> None:
    error: SeldonError = as_seldon_error(exc)
    await context.abort(error.grpc_code, f"Exception calling application: {error.info}")
