"""The graph's own series beside the request metrics every model has: how long each node takes per
call, by graph, node and method, the method named by the ``method`` label value of Seldon's own series
(``predict``, ``inputtransform``, ``outputtransform``, ``router``, ``aggregate``, ``feedback``).

A node call is on the graph's hot path, so it is timed through `core.metrics.Observer`, like every
inference request."""

from __future__ import annotations

from inferd.core import metrics
from inferd.core.counters import Histogram
from inferd.protocols.seldon import methods

NODE_LATENCY = Histogram(
    "inferd_graph_node_duration_seconds",
    "Time the nodes of an inference graph take per call (failed calls included), by graph, node and "
    "Seldon method (predict, inputtransform, outputtransform, router, aggregate, feedback).",
    ["graph", "node", "method"],
    buckets=metrics.BUCKETS,
)


def node_latency(graph: str, node: str, method: str) -> metrics.Observer:
    """The latency series of ``node``'s calls of the Seldon ``method`` (``transform_input`` ...)."""
    return metrics.Observer(NODE_LATENCY.labels(graph, node, methods.LABELS[method]))
