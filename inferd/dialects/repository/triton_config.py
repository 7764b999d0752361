"""A repository load's ``config`` written in Triton's terms (its ``ModelConfig`` as JSON, what
tritonclient's ``load_model(config=...)`` sends a Triton server) rather than inferd's keys.

Triton's keys that mean something to inferd become its settings (``max_batch_size`` above 0 and
``dynamic_batching.max_queue_delay_microseconds`` are adaptive batching's size and wait); the
others (``backend``, ``input``, ``instance_group``, ``parameters``...) are left out of the model's
``inferd.yaml``, which would refuse them, and kept by the data plane, which answers them in the
model's configuration (`inferd.core.model_config.with_given`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Top-level fields of Triton's ModelConfig that are not inferd settings.
TRITON_ONLY = frozenset(
    {
        "platform",
        "backend",
        "runtime",
        "version_policy",
        "input",
        "output",
        "batch_input",
        "batch_output",
        "optimization",
        "dynamic_batching",
        "sequence_batching",
        "ensemble_scheduling",
        "instance_group",
        "default_model_filename",
        "cc_model_filenames",
        "metric_tags",
        "model_warmup",
        "model_operations",
        "model_transaction_policy",
        "model_repository_agents",
        "response_cache",
        "model_metrics",
    }
)


def is_triton(config: Mapping[str, Any]) -> bool:
    """Whether ``config`` uses any field only Triton's ModelConfig has."""
    return not TRITON_ONLY.isdisjoint(config)


def inferd_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The inferd settings of a Triton ``config``: its other keys (inferd's own, such as ``target``,
    stay), Triton's batching as inferd's, Triton's own fields and ``parameters`` left out."""
    own = {key: value for key, value in config.items() if key not in TRITON_ONLY and key != "parameters"}
    size = own.get("max_batch_size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        own.pop("max_batch_size", None)  # Triton's 0: no batch dimension, no batching
    dynamic = config.get("dynamic_batching")
    if isinstance(dynamic, Mapping):
        delay = dynamic.get("max_queue_delay_microseconds")
        if isinstance(delay, (int, float, str)) and str(delay).isdigit() and int(delay) > 0:
            own.setdefault("max_batch_time_ms", int(delay) / 1000)
    return own
