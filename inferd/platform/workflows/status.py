"""``inferd get``: each deployment's endpoint, its services with their state, weight, replicas (ready
and wanted), workers and what
their ``/metrics`` say (requests, errors, latency), and one status word for the whole:

- ``live``: every service with weight is running;
- ``updating``: a service is starting (a deploy in progress, or a crashed one restarting);
- ``error``: a service with weight has failed (its reason is shown);
- ``stopped``: no endpoint, or nothing with weight.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inferd.platform.workflows.control import Control, quoted
from inferd.platform.workflows.rollout import remove_service


@dataclass
class ServiceStatus:
    id: str
    version: str
    state: str
    weight: int | None
    shadow: bool
    workers: int
    reason: str
    metrics: dict[str, Any] | None
    replicas: int = 1
    ready_replicas: int = 0

    @property
    def requests(self) -> int:
        return int((self.metrics or {}).get("requests", 0))


@dataclass
class DeploymentStatus:
    name: str
    endpoint: str | None
    services: list[ServiceStatus] = field(default_factory=list)

    @property
    def status(self) -> str:
        routed = [s for s in self.services if s.weight]
        if any(s.state == "failed" for s in routed):
            return "error"
        if any(s.state == "starting" for s in self.services):
            return "updating"
        if routed and all(s.state == "running" for s in routed):
            return "live"
        return "stopped"

    @property
    def replicas(self) -> str:
        """Ready replicas / replicas wanted, of the services with weight."""
        routed = [s for s in self.services if s.weight]
        return f"{sum(s.ready_replicas for s in routed)}/{sum(s.replicas for s in routed)}"

    @property
    def requests(self) -> int:
        return sum(s.requests for s in self.services if not s.shadow)

    @property
    def errors(self) -> int:
        return sum(int((s.metrics or {}).get("errors", 0)) for s in self.services if not s.shadow)

    def latency(self, key: str) -> float | None:
        """The ``key`` (mean, p50, p99) latency of the service answering the most requests, in ms."""
        answering = [s for s in self.services if s.metrics and not s.shadow and s.requests]
        if not answering:
            return None
        busiest = max(answering, key=lambda s: s.requests)
        found = ((busiest.metrics or {}).get("latency_ms") or {}).get(key)
        return float(found) if found is not None else None

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "endpoint": self.endpoint,
            "status": self.status,
            "replicas": self.replicas,
            "requests": self.requests,
            "errors": self.errors,
            "latency_ms": {key: self.latency(key) for key in ("mean", "p50", "p99")},
            "services": [vars(service) for service in self.services],
        }


def deployment_status(control: Control, name: str) -> DeploymentStatus:
    endpoints = control.endpoints(name)
    endpoint = next((e for e in endpoints if e["name"] == name), endpoints[0] if endpoints else None)
    labels = {version["id"]: version["label"] for version in control.versions(name)}
    weights = {route["service_id"]: route["weight"] for route in endpoint["routes"]} if endpoint else {}
    shadow = endpoint.get("shadow_service_id") if endpoint else None
    found = DeploymentStatus(name, endpoint["name"] if endpoint else None)
    for service in control.services(name):
        if service["state"] == "stopped" and service["id"] not in weights and service["id"] != shadow:
            continue
        live = service["state"] in ("running", "starting")
        metrics = (control.metrics(service["id"]) or {}).get("metrics") if live else None
        found.services.append(
            ServiceStatus(
                id=service["id"],
                version=labels.get(service["version_id"], service["version_id"]),
                state=service["state"],
                weight=weights.get(service["id"]),
                shadow=service["id"] == shadow,
                workers=int(service["workers"]),
                reason=service.get("reason") or "",
                metrics=metrics,
                replicas=int(service.get("replicas", 1)),
                ready_replicas=int(service.get("ready_replicas", 0)),
            )
        )
    found.services.sort(key=lambda s: (s.shadow, -(s.weight or 0), s.id))
    return found


def all_statuses(control: Control) -> list[DeploymentStatus]:
    deployments = control.call("GET", "/deployments")
    return [deployment_status(control, deployment["name"]) for deployment in deployments]


def remove_deployment(control: Control, name: str) -> list[str]:
    """``inferd delete``: its endpoints (the gateway forgets them at once), its services (each stopped
    after answering what it holds) and the deployment with its versions. What was removed, in words."""
    removed = []
    for endpoint in control.endpoints(name):
        control.call("DELETE", f"/endpoints/{quoted(endpoint['id'])}")
        removed.append(f"endpoint {endpoint['name']}")
    for service in control.services(name):
        remove_service(control, service["id"])
        removed.append(f"service {service['id']}")
    control.call("DELETE", f"/deployments/{quoted(name)}")
    removed.append(f"deployment {name}")
    return removed
