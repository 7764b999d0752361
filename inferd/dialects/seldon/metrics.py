"""Seldon's custom metrics on inferd's Prometheus endpoint (spec §9).

User ``metrics()``, ``SeldonResponse.metrics`` and ``meta.metrics`` of raw returns are recorded per
call: COUNTER accumulates (exposed as ``<key>_total``), GAUGE holds the last value (the most recent
write wins across workers), TIMER is milliseconds observed in seconds into a histogram with Seldon's
buckets. Every series carries the metric's own tags, the ``method``, the deployment labels Seldon
reads from its environment and ``worker_id``. prometheus_client's multiprocess mode sums workers.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from prometheus_client import Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.metrics_core import Metric

from inferd.core.counters import expose
from inferd.dialects.seldon.unit import NOT_IMPLEMENTED, NOT_IMPLEMENTED_IMAGE, predictor_version, split_image
from inferd.protocols import prometheus
from inferd.protocols.seldon import methods
from inferd.protocols.seldon.errors import BAD_METRIC, SeldonError

expose()  # inferd's own families come first in the registry, before Seldon's made below

TYPES = ("COUNTER", "GAUGE", "TIMER")
#: inferd's own kind for the reward sum, not one a user metric can name: a ``<key>_total`` that,
#: unlike a prometheus_client Counter, can go down (seldon-core summed negative rewards too).
SUM = "SUM"
#: ``[0]``, 50 log-spaced bounds from 1 ms to 30 s, then +Inf (added by prometheus_client).
TIMER_BUCKETS = (0.0, *np.geomspace(0.001, 30, 50).tolist())

#: A label every series `CustomMetrics` writes carries (the deployment labels are set last, so no
#: metric tag replaces them) and none of inferd's own series or the process's does.
SELDON_LABEL = "seldon_deployment_name"
FEEDBACK_KEY = "seldon_api_model_feedback"
REWARD_KEY = "seldon_api_model_feedback_reward"


def deployment_labels(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The labels seldon-core derives from the operator's environment, ``NOT_IMPLEMENTED`` when unset."""
    image_name, image_version = split_image(environ.get("PREDICTIVE_UNIT_IMAGE", NOT_IMPLEMENTED_IMAGE))
    deployment = environ.get("SELDON_DEPLOYMENT_ID", NOT_IMPLEMENTED)
    return {
        "deployment_name": deployment,
        "model_name": environ.get("PREDICTIVE_UNIT_ID", NOT_IMPLEMENTED),
        "model_image": image_name,
        "model_version": image_version,
        "predictor_name": environ.get("PREDICTOR_ID", NOT_IMPLEMENTED),
        "predictor_version": predictor_version(environ),
        "seldon_deployment_name": deployment,
        "image_name": image_name,
        "image_version": image_version,
    }


def validate(metrics: Any) -> list[dict[str, Any]]:
    """``metrics`` if it is a list of ``{key, [type,] value[, tags]}``; else 500 BAD_METRIC, as Seldon.

    A metric without ``type`` is a COUNTER, from raw and high-level methods alike: COUNTER is the
    protobuf enum's default, so a SeldonMessage's COUNTER arrives with no type at all, on REST and gRPC.
    """
    if isinstance(metrics, (list, tuple)):
        metrics = [
            {**metric, "type": "COUNTER"} if isinstance(metric, dict) and "type" not in metric else metric
            for metric in metrics
        ]
    valid = isinstance(metrics, list) and all(
        isinstance(metric, dict)
        and isinstance(metric.get("key"), str)
        and metric.get("type") in TYPES
        and isinstance(metric.get("value"), (int, float))
        and not isinstance(metric.get("value"), bool)
        and isinstance(metric.get("tags", {}), dict)
        for metric in metrics
    )
    if not valid:
        raise SeldonError(f"Bad metric created during request: {metrics!r}", 500, BAD_METRIC)
    return list(metrics)


class CustomMetrics:
    """Records validated Seldon metrics into prometheus_client, creating each family on first use."""

    def __init__(self, labels: dict[str, str] | None = None) -> None:
        self.labels = {**(labels or deployment_labels()), "worker_id": str(os.getpid())}
        self._families: dict[str, tuple[str, MetricWrapperBase, tuple[str, ...]]] = {}
        self._lock = threading.Lock()

    def record(self, metrics: Sequence[dict[str, Any]], method: str) -> None:
        for metric in metrics:
            kind, family, label_names = self._family(metric["key"], metric["type"], metric.get("tags") or {})
            tags = {str(key): str(value) for key, value in (metric.get("tags") or {}).items()}
            values = {**tags, "method": method, **self.labels}
            child = family.labels(*(values.get(name, "") for name in label_names))
            value = float(metric["value"])
            if kind == "COUNTER":
                if value < 0:
                    raise SeldonError(f"COUNTER {metric['key']} cannot decrease by {value}", 500, BAD_METRIC)
                child.inc(value)  # type: ignore[attr-defined]
            elif kind == "GAUGE":
                child.set(value)  # type: ignore[attr-defined]
            elif kind == SUM:
                child.inc(value)  # type: ignore[attr-defined]
            else:
                child.observe(value / 1000)  # type: ignore[attr-defined]

    def feedback(self, reward: float) -> None:
        """Seldon counts feedback with a non-zero reward and sums the rewards, both under the
        ``feedback`` method; a reward may be negative, so its sum is a `SUM`."""
        counters = [
            {"key": FEEDBACK_KEY, "type": "COUNTER", "value": 1},
            {"key": REWARD_KEY, "type": SUM, "value": reward},
        ]
        self.record(counters, methods.FEEDBACK)

    def _family(
        self, key: str, kind: str, tags: dict[str, Any]
    ) -> tuple[str, MetricWrapperBase, tuple[str, ...]]:
        """The family of ``key``, created with the label names of its first use; a key used with
        another type is a bad metric."""
        with self._lock:
            found = self._families.get(key)
            if found is None:
                names = (*sorted(str(tag) for tag in tags if tag not in self.labels), "method", *self.labels)
                try:
                    found = (kind, _create(key, kind, names), names)
                except ValueError as exc:
                    raise SeldonError(f"Bad metric {key!r}: {exc}", 500, BAD_METRIC) from None
                self._families[key] = found
        if found[0] != kind:
            raise SeldonError(f"metric {key!r} is a {found[0]}, not a {kind}", 500, BAD_METRIC)
        return found


def _create(key: str, kind: str, label_names: tuple[str, ...]) -> MetricWrapperBase:
    description = f"Seldon custom {kind.lower()} {key}"
    if kind == "COUNTER":
        return Counter(key, description, label_names)
    if kind == "GAUGE":
        return Gauge(key, description, label_names, multiprocess_mode="mostrecent")
    if kind == SUM:
        return Gauge(f"{key}_total", description, label_names, multiprocess_mode="sum")
    return Histogram(key, description, label_names, buckets=TIMER_BUCKETS)


class SeldonSeries:
    """A collector of the Seldon series alone, from every worker: what seldon-core's metrics server
    served (custom metrics and the feedback counters with their labels), without inferd's own
    series, the Python process's, or the ``_created`` samples prometheus_client adds."""

    def collect(self) -> Iterator[Metric]:
        for family in prometheus.registry().collect():
            created = f"{family.name}_created"
            samples = [s for s in family.samples if SELDON_LABEL in s.labels and s.name != created]
            if samples:
                kept = Metric(family.name, family.documentation, family.type, family.unit)
                kept.samples = samples
                yield kept


def exposition() -> bytes:
    """The Prometheus text of the Seldon series (`SeldonSeries`)."""
    return generate_latest(SeldonSeries())


_recorder: CustomMetrics | None = None


def recorder() -> CustomMetrics:
    """This process's one recorder: prometheus_client families are process-wide, so a reloaded
    component keeps counting into the same ones."""
    global _recorder
    if _recorder is None:
        _recorder = CustomMetrics()
    return _recorder
