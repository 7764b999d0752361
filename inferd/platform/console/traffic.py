"""What the console shows as a service's traffic: the requests its server answered and their mean
latency, read from the service's own ``/metrics`` (every worker's, over every protocol), and the
requests the gateway sent it, read from this process's registry (`inferd.platform.gateway.metrics`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

import httpx
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from inferd.platform.records import Service, ServiceState
from inferd.protocols import prometheus

#: A service that does not answer its metrics within this is shown without them, not waited for.
TIMEOUT = 2.0


def gateway_requests() -> dict[str, int]:
    """Requests the gateway answered, by upstream (``127.0.0.1:PORT``), every endpoint and code."""
    found: dict[str, int] = {}
    for family in REGISTRY.collect():
        if family.name != "inferd_gateway_requests":
            continue
        for sample in family.samples:
            upstream = sample.labels.get("upstream", "")
            if sample.name == "inferd_gateway_requests_total" and upstream:
                found[upstream] = found.get(upstream, 0) + int(sample.value)
    return found


def served(exposition: str) -> prometheus.Traffic:
    """Requests and time of every model in a server's ``/metrics`` exposition, summed."""
    total = prometheus.Traffic()
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == "inferd_requests_total" and sample.labels.get("outcome") in ("ok", "error"):
                outcome = sample.labels["outcome"]
                setattr(total, outcome, getattr(total, outcome) + int(sample.value))
            elif sample.name == "inferd_request_duration_seconds_sum":
                total.seconds += sample.value
    return total


async def traffic(
    services: Iterable[Service],
    token_of: Callable[[str], str | None],
    addresses: Callable[[Service], list[str]],
) -> dict[str, dict[str, Any]]:
    """Each service's traffic, summed over its replicas (``addresses``: where each replica of a
    service listens; ``token_of``: the token a service takes): ``requests`` and ``latency_ms`` (None
    when none of its servers said) and ``gateway`` (requests the gateway sent it)."""
    listed = list(services)
    through = gateway_requests()
    async with httpx.AsyncClient(timeout=TIMEOUT, trust_env=False) as http:
        counted = await asyncio.gather(
            *(_scrape_all(http, service, addresses(service), token_of(service.id)) for service in listed)
        )
    return {
        service.id: {
            "requests": None if found is None else {"ok": found.ok, "error": found.error},
            "latency_ms": None if found is None else found.mean_ms,
            "gateway": sum(through.get(address, 0) for address in addresses(service)),
        }
        for service, found in zip(listed, counted, strict=True)
    }


async def _scrape_all(
    http: httpx.AsyncClient, service: Service, addresses: list[str], token: str | None
) -> prometheus.Traffic | None:
    if service.state is not ServiceState.RUNNING:
        return None
    headers = {"authorization": f"Bearer {token}"} if token else {}
    scraped = await asyncio.gather(*(_scrape(http, a, headers) for a in addresses))
    found = [one for one in scraped if one is not None]
    if not found:
        return None
    return prometheus.Traffic(
        sum(one.ok for one in found), sum(one.error for one in found), sum(one.seconds for one in found)
    )


async def _scrape(
    http: httpx.AsyncClient, address: str, headers: dict[str, str]
) -> prometheus.Traffic | None:
    try:
        answer = await http.get(f"http://{address}{prometheus.PATH}", headers=headers)
    except httpx.HTTPError:
        return None
    if answer.status_code != 200:
        return None
    try:
        return served(answer.text)
    except ValueError:  # not an exposition: something else took the port
        return None
