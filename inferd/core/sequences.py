"""Stateful models: state kept per sequence id between the requests of one sequence (Triton's
sequence extension, ``sequence_id`` / ``sequence_start`` / ``sequence_end`` request parameters).

A `SequenceModel` is a `Model` whose ``predict`` also takes the state of the request's sequence, a
dict it may change in place. A request with ``sequence_start`` creates that state (`initial_state`),
the following requests of the same ``sequence_id`` see it, and the one with ``sequence_end`` drops it
after its ``predict``. A sequence that no request touched for ``sequence_idle_timeout`` seconds is
dropped too; at most ``max_sequences`` live at once (a start past that is shed with `Overloaded`).

Kept in its own module (not in `inferd.core.model`) so plain models carry none of it. State lives in
the worker process: with several workers one sequence must reach one worker (not done yet; see
docs/dialects/native.md).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import OrderedDict
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from typing import Any

from inferd.core.errors import InvalidInput, ModelLoadError, Overloaded
from inferd.core.model import Model, resolve
from inferd.core.registry.entries import ModelEntry
from inferd.core.types import InferenceRequest, InferenceResponse, Parameters, Tensors

#: The state of one sequence, as `SequenceModel.predict` sees it.
State = dict[str, Any]
SequenceId = int | str
#: Longest string sequence id taken (Triton's are ids, not payloads).
MAX_ID_LENGTH = 256


@dataclass
class _Live:
    state: State
    used: float
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class SequenceModel(Model):
    """Base class of a model with state per sequence.

    Override ``predict(inputs, state)``: ``state`` is the dict of the request's sequence, fresh from
    `initial_state` at ``sequence_start``; change it in place. Optionally override `initial_state`
    and `end_sequence` (called with the state when the sequence ends, by request or idle timeout).
    """

    #: Seconds a sequence may go without a request before its state is dropped (set by the loader).
    sequence_idle_timeout: float = 60.0
    #: Most sequences alive at once (set by the loader).
    max_sequences: int = 1024

    _sequence_table: OrderedDict[SequenceId, _Live] | None = None

    @property
    def _sequences(self) -> OrderedDict[SequenceId, _Live]:
        """The live sequences, made on first use (so a subclass's ``__init__`` need not call ours)."""
        if self._sequence_table is None:
            self._sequence_table = OrderedDict()
        return self._sequence_table

    def initial_state(self) -> State:
        """The state a new sequence starts with; an empty dict unless overridden."""
        return {}

    def end_sequence(self, state: State) -> Awaitable[None] | None:
        """Called once with a sequence's state when it ends or idles out; nothing unless overridden."""
        return None

    def predict(self, inputs: Tensors, state: State) -> Tensors | Awaitable[Tensors]:  # type: ignore[override]
        """Map named input arrays to named output arrays, reading and changing ``state``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement predict(inputs, state)")

    @property
    def live_sequences(self) -> int:
        """How many sequences hold state now."""
        return len(self._sequences)

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        sequence_id, start, end = _sequence_parameters(self.name, request.parameters)
        await self._expire(time.monotonic())
        live = self._sequences.get(sequence_id)
        if start:
            if live is None and len(self._sequences) >= self.max_sequences:
                raise Overloaded(
                    f"model '{self.name}' has {len(self._sequences)} live sequences, its most "
                    f"(max_sequences); end one or retry later",
                    retry_after=1.0,
                )
            if live is not None:
                await resolve(self.end_sequence(live.state))
            live = _Live(self.initial_state(), time.monotonic())
            self._sequences[sequence_id] = live
        elif live is None:
            raise InvalidInput(
                f"sequence {sequence_id!r} of model '{self.name}' was not started (or it ended, or "
                f"was idle over {self.sequence_idle_timeout:g} s): send sequence_start=true first"
            )
        self._sequences.move_to_end(sequence_id)
        async with live.lock:  # the requests of one sequence run one at a time, in order
            try:
                outputs = await self._predict(request.inputs, live.state)
            finally:
                live.used = time.monotonic()
                if end and self._sequences.get(sequence_id) is live:
                    del self._sequences[sequence_id]
                    await resolve(self.end_sequence(live.state))
        return InferenceResponse(outputs)

    async def _predict(self, inputs: Tensors, state: State) -> Tensors:
        if not self.predict_in_thread or inspect.iscoroutinefunction(self.predict):
            return await resolve(self.predict(inputs, state))
        return await resolve(await self.call_user(self.predict, inputs, state))

    async def _expire(self, now: float) -> None:
        """Drop the sequences idle over ``sequence_idle_timeout`` (oldest first, so it stops early)."""
        limit = now - self.sequence_idle_timeout
        while self._sequences:
            sequence_id, live = next(iter(self._sequences.items()))
            if live.used > limit or live.lock.locked():
                break
            del self._sequences[sequence_id]
            await resolve(self.end_sequence(live.state))


def refuse_sequences_across_workers(entries: Iterable[ModelEntry], workers: int) -> None:
    """`ModelLoadError` when a loaded model (``entries``: the registry's) keeps sequences while
    ``workers`` > 1 processes serve it: each worker would keep its own state, and a sequence's
    requests reach whichever worker accepts the connection (no routing of one sequence to one worker
    yet)."""
    for entry in entries:
        if isinstance(entry.model, SequenceModel):
            raise ModelLoadError(
                f"model '{entry.name}' keeps state per sequence (inferd.SequenceModel), which needs "
                f"one worker: serve it without --workers {workers} (state lives in one process)"
            )


def _sequence_parameters(model: str, parameters: Parameters) -> tuple[SequenceId, bool, bool]:
    """(sequence id, start, end) of a request, or `InvalidInput` saying what is wrong."""
    sequence_id = parameters.get("sequence_id")
    if sequence_id is None or sequence_id == 0 or sequence_id == "":
        raise InvalidInput(
            f"model '{model}' keeps state per sequence: a request needs a non-zero "
            "sequence_id parameter (and sequence_start=true to begin one)"
        )
    if isinstance(sequence_id, bool) or not isinstance(sequence_id, int | str):
        raise InvalidInput(f"sequence_id must be an integer or a string, not {type(sequence_id).__name__}")
    if isinstance(sequence_id, str) and len(sequence_id) > MAX_ID_LENGTH:
        raise InvalidInput(f"sequence_id is over {MAX_ID_LENGTH} characters")
    flags = []
    for name in ("sequence_start", "sequence_end"):
        value = parameters.get(name, False)
        if not isinstance(value, bool):
            raise InvalidInput(f"{name} must be true or false, not {value!r}"[:200])
        flags.append(value)
    return sequence_id, flags[0], flags[1]
