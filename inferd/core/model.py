"""The one shape of model the runtime knows.

User code written for inferd subclasses `Model` directly (the native dialect). Every other dialect
wraps its user code in a `Model` subclass, and wrappers such as batching are `Model`s holding a
`Model`, so the registry and the data plane never learn which one they hold.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Any, ClassVar, Literal, TypeVar

from inferd.core.offload import AdaptiveOffload, in_thread
from inferd.core.types import InferenceRequest, InferenceResponse, ModelMetadata, Tensors, TensorSpec

T = TypeVar("T")
#: Where synchronous user code runs: the loop (False), threads (True), or learnt from its durations.
PredictInThread = bool | Literal["auto"]


async def resolve(value: T | Awaitable[T]) -> T:
    """Await ``value`` if a user method returned an awaitable, so methods may be sync or async."""
    if inspect.isawaitable(value):
        return await value
    return value


class Model:
    """Base class of every served model.

    Override `load` to read weights, `predict` to map a dict of named numpy arrays to a dict of named
    numpy arrays, and optionally `unload` and `ready`. Each may be ``def`` or ``async def``. Declare
    `inputs` and `outputs` to have requests checked against them and reported as metadata.
    """

    inputs: ClassVar[tuple[TensorSpec, ...]] = ()
    outputs: ClassVar[tuple[TensorSpec, ...]] = ()
    platform: ClassVar[str] = "python"

    #: Set by the loader: the served name and version.
    name: str = ""
    version: str | None = None
    #: Where synchronous user code runs: on the event loop (False: fastest for quick code), in a
    #: thread (True: slow code holds up no other request), or ``"auto"``, learnt from its durations.
    predict_in_thread: PredictInThread = False
    #: The threads of that code; None for the loop's default executor.
    user_threads: Executor | None = None
    _offload: AdaptiveOffload | None = None

    def load(self) -> Awaitable[None] | None:
        """Read weights and prepare; called once per process before the model is ready."""
        return None

    def predict(self, inputs: Tensors) -> Tensors | Awaitable[Tensors]:
        """Map named input arrays to named output arrays."""
        raise NotImplementedError(f"{type(self).__name__} does not implement predict()")

    def unload(self) -> Awaitable[None] | None:
        """Release what `load` took."""
        return None

    def ready(self) -> bool:
        """Whether the loaded model can answer; override to add a health check of your own."""
        return True

    def metadata(self) -> ModelMetadata:
        """Names, datatypes and shapes clients see; read once, right after `load`."""
        versions = (self.version,) if self.version else ()
        return ModelMetadata(self.name, versions, self.platform, self.inputs, self.outputs)

    async def call_user(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)``, synchronous user code, where ``predict_in_thread`` says."""
        if self.predict_in_thread == "auto":
            if self._offload is None:
                self._offload = AdaptiveOffload(self.user_threads)
            return await self._offload.run(function, *args)
        if self.predict_in_thread:
            return await in_thread(self.user_threads, function, *args)
        return function(*args)

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        """Run one request; wrappers and dialect adapters override this, users override `predict`."""
        if not self.predict_in_thread or inspect.iscoroutinefunction(self.predict):
            outputs = await resolve(self.predict(request.inputs))
        else:
            outputs = await resolve(await self.call_user(self.predict, request.inputs))
        return InferenceResponse(outputs)
