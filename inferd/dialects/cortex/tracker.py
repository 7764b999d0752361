"""Cortex's prediction tracker as Prometheus metrics: classes counted per label, regression values in a
histogram. Called after the response body exists; problems are only logged, as in Cortex (a warning the
first time per API, then at debug level, so a mismatched tracker does not flood the log)."""

from __future__ import annotations

import logging
from typing import Any

from inferd.core.counters import Counter, Histogram
from inferd.dialects.cortex.config import Tracker

logger = logging.getLogger("inferd.cortex")

CLASSES = Counter(
    "cortex_tracker_predictions_total",
    "Predictions of Cortex classification APIs with a tracker, by API and predicted class.",
    ["api", "class"],
)
VALUES = Histogram(
    "cortex_tracker_prediction_value",
    "Predicted values of Cortex regression APIs with a tracker, by API.",
    ["api"],
    buckets=(-1000, -100, -10, -1, 0, 1, 10, 100, 1000, 10000, float("inf")),
)
_warned: set[str] = set()


def track(api: str, tracker: Tracker, result: Any) -> None:
    try:
        value = _tracked_value(tracker, result)
        if tracker.model_type == "classification":
            if not isinstance(value, (str, int)) or isinstance(value, bool):
                raise ValueError(f"expected a string or an integer class, found {value!r}")
            CLASSES.labels(api, str(value)).inc()
        else:
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ValueError(f"expected a number, found {value!r}")
            VALUES.labels(api).observe(float(value))
    except Exception as exc:
        level = logging.DEBUG if api in _warned else logging.WARNING
        _warned.add(api)
        logger.log(level, "api %s: tracker: %s", api, exc)


def _tracked_value(tracker: Tracker, result: Any) -> Any:
    if tracker.key is None:
        return result
    if not isinstance(result, dict) or tracker.key not in result:
        raise ValueError(f'expected the prediction to be a dict with key "{tracker.key}"')
    return result[tracker.key]
