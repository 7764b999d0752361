"""What every server of Seldon's gRPC services shares: a call of the model through the data plane
(admitted, counted and timed as every protocol's), and an error answered as Seldon's status code with
its message (spec §10), where Seldon sent UNKNOWN."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from inferd.core.dataplane import DataPlane, M, ModelCall
from inferd.protocols.seldon.errors import SeldonError, as_seldon_error

PROTOCOL = "seldon-grpc"
Context = Any  # grpc.aio.ServicerContext; grpcio ships no type hints
T = TypeVar("T")


async def called(
    dataplane: DataPlane,
    name: str,
    kind: type[M],
    context: Context,
    answer: Callable[[ModelCall[M]], Awaitable[T]],
) -> T:
    """``answer(call)`` within a data-plane call of model ``name`` (a ``kind``), which runs the model
    through ``call.run``; any error, an unready model's included, aborts the call with its status."""
    try:
        with dataplane.call(name, PROTOCOL, kind) as call:
            return await answer(call)
    except Exception as exc:
        await abort(context, exc)
        raise  # unreachable: abort raises


async def abort(context: Context, exc: BaseException) -> None:
    error: SeldonError = as_seldon_error(exc)
    await context.abort(error.grpc_code, f"Exception calling application: {error.info}")
