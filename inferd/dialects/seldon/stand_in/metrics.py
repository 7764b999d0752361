"""``seldon_core.metrics`` without seldon-core: the metric types and the ``create_*`` helpers a
component's ``metrics()`` returns, checked by the same rule the server records them by.

The server-side collector (``SeldonMetrics``) is not here: inferd records the metrics a component
returns itself (`inferd.dialects.seldon.metrics`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from inferd.dialects.seldon import metrics
from inferd.protocols.seldon import methods
from inferd.protocols.seldon.errors import SeldonError

FEEDBACK_KEY = "seldon_api_model_feedback"
FEEDBACK_REWARD_KEY = "seldon_api_model_feedback_reward"
COUNTER, GAUGE, TIMER = metrics.TYPES
#: Seldon's timer buckets in seconds: 0, 50 log-spaced bounds from 1 ms to 30 s, +Inf.
BINS = [0, *metrics.TIMER_BUCKETS[1:], float(np.inf)]

FEEDBACK_METRIC_METHOD_TAG = methods.FEEDBACK
PREDICT_METRIC_METHOD_TAG = methods.PREDICT
INPUT_TRANSFORM_METRIC_METHOD_TAG = methods.TRANSFORM_INPUT
OUTPUT_TRANSFORM_METRIC_METHOD_TAG = methods.TRANSFORM_OUTPUT
ROUTER_METRIC_METHOD_TAG = methods.ROUTE
AGGREGATE_METRIC_METHOD_TAG = methods.AGGREGATE
HEALTH_METRIC_METHOD_TAG = methods.HEALTH

#: The deployment labels every custom metric carries, read from the environment at import.
DEFAULT_LABELS = metrics.deployment_labels()


def split_image_tag(tag: str) -> tuple[str, str]:
    """``("seldonio/sklearn-iris", "0.1")`` of ``"seldonio/sklearn-iris:0.1"``."""
    name, _, version = tag.rpartition(":")
    return name, version


def _metric(key: str, kind: str, value: float) -> dict[str, Any]:
    """The metric dict; a numpy number becomes the Python number the server's check wants."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"a {kind} value must be a number, got {value!r}")
    return {"key": key, "type": kind, "value": value.item() if isinstance(value, np.number) else value}


def create_counter(key: str, value: float) -> dict[str, Any]:
    """A COUNTER: the server adds ``value`` to ``<key>_total``."""
    return _metric(key, COUNTER, value)


def create_gauge(key: str, value: float) -> dict[str, Any]:
    """A GAUGE: the server sets ``key`` to ``value``."""
    return _metric(key, GAUGE, value)


def create_timer(key: str, value: float) -> dict[str, Any]:
    """A TIMER in milliseconds: the server observes it, in seconds, in the histogram ``key``."""
    return _metric(key, TIMER, value)


def validate_metrics(metrics_list: Any) -> bool:
    """Whether ``metrics_list`` is a list of ``{key, type, value[, tags]}`` the server records.

    Stricter than the server by one rule, as seldon-core's helper is: ``type`` must be written out,
    though the server counts a metric without one as a COUNTER (the protobuf enum's default).
    """
    if isinstance(metrics_list, list) and any(isinstance(m, dict) and "type" not in m for m in metrics_list):
        return False
    try:
        metrics.validate(metrics_list)
    except SeldonError:
        return False
    return True
