"""The gateway's Prometheus metrics, on the default registry beside inferd's own (`inferd.core.metrics`).

The labelled children are looked up once per label set and kept: ``labels()`` on every request costs
more than the count itself.
"""

from __future__ import annotations

from prometheus_client import Counter

REQUESTS = Counter(
    "inferd_gateway_requests_total",
    "Requests the gateway answered, by endpoint, upstream (empty when none was asked) and status code.",
    ["endpoint", "upstream", "code"],
)
SHADOW_REQUESTS = Counter(
    "inferd_gateway_shadow_requests_total",
    "Copies of requests sent to an endpoint's shadow, by endpoint and outcome (its status code, or "
    "error when it did not answer); their answers are dropped.",
    ["endpoint", "outcome"],
)
SHADOW_DROPPED = Counter(
    "inferd_gateway_shadow_dropped_total",
    "Copies for an endpoint's shadow not sent: too many copies in flight, or a body too large to copy.",
    ["endpoint"],
)

_requests: dict[tuple[str, str, int], Counter] = {}
_shadow: dict[tuple[str, str], Counter] = {}
_dropped: dict[str, Counter] = {}


def count_request(endpoint: str, upstream: str, code: int) -> None:
    child = _requests.get((endpoint, upstream, code))
    if child is None:
        child = _requests[endpoint, upstream, code] = REQUESTS.labels(endpoint, upstream, str(code))
    child.inc()


def count_shadow(endpoint: str, outcome: str) -> None:
    child = _shadow.get((endpoint, outcome))
    if child is None:
        child = _shadow[endpoint, outcome] = SHADOW_REQUESTS.labels(endpoint, outcome)
    child.inc()


def count_dropped(endpoint: str) -> None:
    child = _dropped.get(endpoint)
    if child is None:
        child = _dropped[endpoint] = SHADOW_DROPPED.labels(endpoint)
    child.inc()
