"""Per model and version counts and durations, as Triton's statistics extension reports them.

Prometheus' series (`inferd.core.metrics`) are per model and protocol, summed into buckets; Triton's
clients ask per model *version* for counts and total nanoseconds of each phase of a request. A
`ModelStats` lives on each registry entry and `inferd.core.dataplane.ModelCall` adds to it: a few
integer additions and one extra clock read per request, no lock (the event loop's thread is the
only writer; a read racing a write sees one request more or less).

Phases, from what inferd measures: ``queue`` is the wait for the model's concurrency limit (zero for
an ungated model), ``compute_infer`` the model's own call (with adaptive batching, its wait for the
batch too), ``compute_input`` inferd's checks before the call, ``compute_output`` the selection and
conversion of outputs after it; ``success``/``fail`` the whole call. The protocol's decoding and
encoding are outside the call and not counted. Each worker process counts its own requests.
"""

from __future__ import annotations

import time
from typing import Any

NS = 1_000_000_000


class ModelStats:
    """Counters of one (model, version); the ``*_ns`` durations are kept in seconds."""

    __slots__ = (
        "compute_input_ns",
        "compute_output_ns",
        "executions",
        "fail_count",
        "fail_ns",
        "infer_count",
        "infer_ns",
        "inference_count",
        "last_inference",
        "queue_ns",
        "success_count",
        "success_ns",
    )

    def __init__(self) -> None:
        # Seconds as floats while counting (no int conversions per request); nanoseconds in `body`.
        self.success_count = self.fail_count = 0
        self.success_ns = self.fail_ns = 0.0
        self.queue_ns = self.compute_input_ns = self.infer_ns = self.compute_output_ns = 0.0
        #: Calls that reached the model's code; inference_count: the rows (batch items) of successes.
        self.infer_count = self.inference_count = self.executions = 0
        #: Seconds since the epoch of the last call's end (0: none yet).
        self.last_inference = 0.0

    def record(
        self, entered: float, run_start: float, run_end: float, ok: bool, rows: int, queued: float
    ) -> None:
        """One call's end: ``entered``/``run_start``/``run_end`` are `time.perf_counter` readings
        (``run_start`` 0: the model was never called), ``queued`` seconds waited for the gate."""
        now = time.perf_counter()
        self.last_inference = time.time()
        if not ok:
            self.fail_count += 1
            self.fail_ns += now - entered
            return
        self.success_count += 1
        self.success_ns += now - entered
        self.inference_count += rows
        if run_start:
            self.infer_count += 1
            self.queue_ns += queued
            self.compute_input_ns += run_start - entered
            self.infer_ns += run_end - run_start - queued
            self.compute_output_ns += now - run_end

    def body(self, name: str, version: str, model: Any) -> dict[str, Any]:
        """Triton's JSON ``model_stats`` item. ``execution_count``: the model's batches when it
        batches (`inferd.core.batching.BatchingModel.executions`), else its calls."""
        executions = getattr(model, "executions", None)

        def duration(count: int, seconds: float) -> dict[str, int]:
            return {"count": count, "ns": max(int(seconds * NS), 0)}

        return {
            "name": name,
            "version": version,
            "last_inference": int(self.last_inference * 1000),
            "inference_count": self.inference_count,
            "execution_count": executions if isinstance(executions, int) else self.infer_count,
            "inference_stats": {
                "success": duration(self.success_count, self.success_ns),
                "fail": duration(self.fail_count, self.fail_ns),
                "queue": duration(self.infer_count, self.queue_ns),
                "compute_input": duration(self.infer_count, self.compute_input_ns),
                "compute_infer": duration(self.infer_count, self.infer_ns),
                "compute_output": duration(self.infer_count, self.compute_output_ns),
                "cache_hit": duration(0, 0),
                "cache_miss": duration(0, 0),
            },
            "batch_stats": [],
        }
