"""inferd's own counters, gauges and histograms, shown by prometheus_client only when they are read.

``import prometheus_client`` loads its exposition too (an HTTP server, urllib.request, wsgiref:
about 1.3 MiB of a worker's memory, issue 26) even in a process nobody scrapes, and every worker
counts its requests from its first one. So the request path counts in these small families, which
behave as prometheus_client's ``Counter``, ``Gauge`` and ``Histogram`` for what inferd calls of them
(``labels`` by position, ``inc``, ``observe``; a child's ``_value``, ``_sum``, ``_buckets`` and
``_upper_bounds``, which `metrics.Series` updates directly), and `expose` hands them to
prometheus_client's registry the first time metrics are read (`inferd.protocols.prometheus`):
they are collected as prometheus_client's own families would be, sample for sample.

With ``PROMETHEUS_MULTIPROC_DIR`` set (several workers), a child's values are prometheus_client's
shared-file ones, made with the same arguments its own metrics pass, so
``multiprocess.MultiProcessCollector`` reads them as it reads its own; elsewhere a value is a float
behind a lock, as prometheus_client's ``MutexValue`` is.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, Generic, TypeVar

INF = float("inf")


class LockedValue:
    """prometheus_client's ``MutexValue``: a float behind a lock."""

    __slots__ = ("_lock", "_value")

    def __init__(self) -> None:
        self._value = 0.0
        self._lock = threading.Lock()

    def inc(self, amount: float) -> None:
        with self._lock:
            self._value += amount

    def set(self, value: float) -> None:
        with self._lock:
            self._value = value

    def get(self) -> float:
        with self._lock:
            return self._value


def shared() -> bool:
    """Whether values live in prometheus_client's shared files (a supervisor's workers)."""
    return bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


def value(
    family: Family[Any], sample: str, labels: tuple[str, ...], values: tuple[str, ...], mode: str = ""
) -> Any:
    """One value of a child: in a shared file (with the arguments prometheus_client's own metric
    would pass) when `shared`, else a `LockedValue`."""
    if not shared():
        return LockedValue()
    from prometheus_client import values as files

    extra = {"multiprocess_mode": mode} if mode else {}
    return files.ValueClass(family.kind, family.name, sample, labels, values, family.documentation, **extra)


def go_float(number: float) -> str:
    """A bucket bound as prometheus_client writes it in ``le`` (its ``floatToGoString``)."""
    from prometheus_client.utils import floatToGoString

    text: str = floatToGoString(number)
    return text


Sample = tuple[str, dict[str, str], float]  # suffix, labels beyond the family's, value
Child = TypeVar("Child", bound="_Child")


class _Child:
    """One labelled series of a family."""

    def __init__(self, family: Family[Any], values: tuple[str, ...]) -> None:
        self._created = time.time()

    def samples(self) -> list[Sample]:
        raise NotImplementedError


class Family(Generic[Child]):
    """A metric with label names; ``labels(*values)`` finds or makes the child of those values."""

    kind: ClassVar[str]
    child_class: type[Child]

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str]) -> None:
        self.name, self.documentation, self.labelnames = name, documentation, tuple(labelnames)
        self._children: dict[tuple[str, ...], Child] = {}
        self._lock = threading.Lock()
        FAMILIES.add(self)  # as a prometheus_client metric joins its default registry

    def labels(self, *values: object) -> Child:
        key = tuple(str(value) for value in values)
        child = self._children.get(key)
        if child is None:
            if len(key) != len(self.labelnames):
                raise ValueError(f"{self.name} takes {len(self.labelnames)} label values, not {len(key)}")
            with self._lock:
                child = self._children.get(key)
                if child is None:
                    child = self._children[key] = self.child_class(self, key)
        return child

    def metric(self, created: bool) -> Any:
        """The family as prometheus_client's ``Metric`` with every child's samples, in the order
        prometheus_client's own family would give them (``_created`` only when ``created``)."""
        from prometheus_client.metrics_core import Metric

        metric = Metric(self.name, self.documentation, self.kind)
        with self._lock:
            children = list(self._children.items())
        for values, child in children:
            series = dict(zip(self.labelnames, values, strict=True))
            for suffix, labels, number in child.samples():
                if suffix != "_created" or created:
                    metric.add_sample(self.name + suffix, {**series, **labels}, number)
        return metric


class CounterChild(_Child):
    def __init__(self, family: Family[Any], values: tuple[str, ...]) -> None:
        super().__init__(family, values)
        self._value = value(family, family.name + "_total", family.labelnames, values)

    def inc(self, amount: float = 1) -> None:
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        self._value.inc(amount)

    def samples(self) -> list[Sample]:
        return [("_total", {}, self._value.get()), ("_created", {}, self._created)]


class Counter(Family[CounterChild]):
    """``prometheus_client.Counter``: a name ending in ``_total`` is the family's name without it."""

    kind, child_class = "counter", CounterChild

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str]) -> None:
        super().__init__(name.removesuffix("_total"), documentation, labelnames)


class GaugeChild(_Child):
    def __init__(self, family: Family[Any], values: tuple[str, ...]) -> None:
        super().__init__(family, values)
        assert isinstance(family, Gauge)
        self._value = value(family, family.name, family.labelnames, values, family.multiprocess_mode)

    def inc(self, amount: float = 1) -> None:
        self._value.inc(amount)

    def dec(self, amount: float = 1) -> None:
        self._value.inc(-amount)

    def set(self, number: float) -> None:
        self._value.set(float(number))

    def samples(self) -> list[Sample]:
        return [("", {}, self._value.get())]


class Gauge(Family[GaugeChild]):
    """``prometheus_client.Gauge``; ``multiprocess_mode`` says how workers' values combine."""

    kind, child_class = "gauge", GaugeChild

    def __init__(
        self, name: str, documentation: str, labelnames: Sequence[str], multiprocess_mode: str = "all"
    ) -> None:
        super().__init__(name, documentation, labelnames)
        self.multiprocess_mode = multiprocess_mode


class HistogramChild(_Child):
    def __init__(self, family: Family[Any], values: tuple[str, ...]) -> None:
        super().__init__(family, values)
        assert isinstance(family, Histogram)
        self._upper_bounds: list[float] = list(family.bounds)
        self._sum = value(family, family.name + "_sum", family.labelnames, values)
        bucket_labels = (*family.labelnames, "le")
        les = go_labels(family.bounds) if shared() else [""] * len(family.bounds)  # in the files' names only
        self._buckets = [value(family, family.name + "_bucket", bucket_labels, (*values, le)) for le in les]

    def observe(self, amount: float) -> None:
        self._sum.inc(amount)
        for index, bound in enumerate(self._upper_bounds):
            if amount <= bound:
                self._buckets[index].inc(1)
                break

    def samples(self) -> list[Sample]:
        found: list[Sample] = []
        total = 0.0
        for bucket, label in zip(self._buckets, go_labels(self._upper_bounds), strict=True):
            total += bucket.get()
            found.append(("_bucket", {"le": label}, total))
        found.append(("_count", {}, total))
        if self._upper_bounds[0] >= 0:
            found.append(("_sum", {}, self._sum.get()))
        found.append(("_created", {}, self._created))
        return found


def go_labels(bounds: Sequence[float]) -> list[str]:
    return [go_float(bound) for bound in bounds]


class Histogram(Family[HistogramChild]):
    """``prometheus_client.Histogram`` with ``buckets`` (+Inf added when missing)."""

    kind, child_class = "histogram", HistogramChild

    def __init__(
        self, name: str, documentation: str, labelnames: Sequence[str], buckets: Sequence[float]
    ) -> None:
        super().__init__(name, documentation, labelnames)
        bounds = [float(bound) for bound in buckets]
        if bounds != sorted(bounds):
            raise ValueError("Buckets not in sorted order")
        if bounds[-1] != INF:
            bounds.append(INF)
        self.bounds = tuple(bounds)


class Families:
    """inferd's families as one prometheus_client collector (``collect`` and ``describe``)."""

    def __init__(self) -> None:
        self.families: list[Family[Any]] = []
        self.exposed = False

    def add(self, family: Family[Any]) -> None:
        self.families.append(family)

    def collect(self) -> Iterator[Any]:
        from prometheus_client import metrics

        created = bool(metrics._use_created)  # PROMETHEUS_DISABLE_CREATED_SERIES, as its own families
        for family in list(self.families):
            yield family.metric(created)

    def describe(self) -> Iterator[Any]:
        from prometheus_client.metrics_core import Metric

        for family in list(self.families):
            yield Metric(family.name, family.documentation, family.kind)


#: Every family made in this process, in the order they were made.
FAMILIES = Families()


def expose() -> None:
    """Put inferd's families in prometheus_client's default registry, once, after the collectors it
    registers itself (process, platform, gc), where its own families would be: called by whatever
    reads that registry or adds to it."""
    if not FAMILIES.exposed:
        from prometheus_client import REGISTRY

        REGISTRY.register(FAMILIES)
        FAMILIES.exposed = True
