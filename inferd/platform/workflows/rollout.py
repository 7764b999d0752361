"""`roll_out`: make one endpoint match a `Layout`, as a rolling update.

1. The deployment is created if missing.
2. Each part is packed; a version whose label names that content is reused, else the bundle is pushed.
3. A service the endpoint already uses that runs the version (same workers, running) is kept; else a
   new service is started, and every new one must reach ``running``. A service that fails to start
   (code that does not load, a port taken) fails the roll-out at its first failed start, with the
   service's reason; the new services are stopped and deleted, and the endpoint is not touched, so
   what served before still serves.
4. The endpoint is switched (not at all when nothing changed): the control API returns once the
   services that lost their traffic have answered what they held.
5. Those services are stopped and deleted. Their versions stay (``inferd platform versions``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inferd.platform.records import Scaling
from inferd.platform.workflows.control import Control, ControlError, quoted
from inferd.platform.workflows.layout import Layout, Part, Previous, WorkflowError, staged

#: How long a new service may take to be ready (inferd serve's own start timeout).
START_TIMEOUT = 300.0
POLL_SECONDS = 0.1
Say = Callable[[str], None]


@dataclass
class Outcome:
    """What a roll-out did."""

    deployment: str
    endpoint: str
    pushed: list[str] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    switched: bool = False
    #: The endpoint's routes as (service id, weight), and its shadow (service id, percent).
    routes: list[tuple[str, int]] = field(default_factory=list)
    shadow: tuple[str, int] | None = None

    @property
    def changed(self) -> bool:
        return bool(self.pushed or self.started or self.retired or self.switched)


def roll_out(
    control: Control, layout: Layout, *, timeout: float = START_TIMEOUT, say: Say = lambda _: None
) -> Outcome:
    control.ensure_deployment(layout.deployment, layout.description)
    outcome = Outcome(layout.deployment, layout.endpoint)
    before = control.endpoint(layout.deployment, layout.endpoint)
    used = _services_of(before)
    services = {service["id"]: service for service in control.services(layout.deployment)}
    versions = {version["label"]: version for version in control.versions(layout.deployment)}
    chosen: dict[int, str] = {}
    try:
        for index, part in enumerate(layout.parts()):
            version = _version(control, layout.deployment, part, versions, outcome, say)
            found = _reusable(part, version, services, used, set(chosen.values()))
            if found is not None:
                _rescale(control, services[found], part.scaling)
                chosen[index] = found
                outcome.kept.append(found)
                continue
            body = {"version": version["id"], "workers": part.workers, **scaling_body(part.scaling)}
            created = control.call("POST", f"/deployments/{quoted(layout.deployment)}/services", body)
            chosen[index] = created["id"]
            outcome.started.append(created["id"])
            say(f"{part.name}: service {created['id']} of version {version['label']} starting")
        for service_id in outcome.started:
            _wait_running(control, service_id, timeout)
            say(f"service {service_id} running")
        routes, shadow = _endpoint_of(layout, chosen, before)
        outcome.routes, outcome.shadow = routes, shadow
        if before is None or _routes_of(before) != routes or _shadow_of(before) != shadow:
            body = {"routes": [{"service": sid, "weight": weight} for sid, weight in routes]}
            if shadow is not None:
                body["shadow"] = {"service": shadow[0], "percent": shadow[1]}
            path = f"/deployments/{quoted(layout.deployment)}/endpoints/{quoted(layout.endpoint)}"
            _switch(control, path, body, before)
            outcome.switched = True
            say(f"endpoint {layout.endpoint}: " + ", ".join(f"{sid}={w}" for sid, w in routes))
    except (WorkflowError, ControlError):
        for service_id in outcome.started:
            remove_service(control, service_id)
        raise
    still = {sid for sid, _ in routes} | ({shadow[0]} if shadow else set())
    for service_id in used - still:
        remove_service(control, service_id)
        outcome.retired.append(service_id)
        say(f"service {service_id} stopped and deleted")
    return outcome


def _switch(control: Control, path: str, body: dict[str, Any], before: dict[str, Any] | None) -> None:
    """Switch the endpoint on condition that it is still as this roll-out read it at its start: when
    another one (or a route) switched it meanwhile, this one fails rather than retire the services
    the other started, and the caller removes its own."""
    condition = {"If-None-Match": "*"} if before is None else {"If-Match": before["etag"]}
    try:
        control.call("PUT", path, body, headers=condition)
    except ControlError as exc:
        if exc.status != 412:
            raise
        raise WorkflowError(
            f"{exc.message}. Another deploy (or a route) switched the endpoint while this one ran: "
            "nothing was switched and the services this deploy started are removed; deploy again"
        ) from None


def _version(
    control: Control,
    deployment: str,
    part: Part,
    versions: dict[str, dict[str, Any]],
    outcome: Outcome,
    say: Say,
) -> dict[str, Any]:
    with staged(part) as bundle:
        found = versions.get(bundle.label)
        if found is not None and found["digest"] == bundle.digest:
            return found
        pushed = control.push(
            deployment, bundle.archive, bundle.label, part.target, part.dialect, part.environment
        )
    versions[pushed["label"]] = pushed
    outcome.pushed.append(pushed["id"])
    say(f"{part.name}: pushed version {pushed['label']} ({pushed['digest'][:19]})")
    return pushed


def _reusable(
    part: Part,
    version: dict[str, Any],
    services: dict[str, dict[str, Any]],
    used: set[str],
    taken: set[str],
) -> str | None:
    """A service of the endpoint running ``version`` as ``part`` asks, not taken by another part."""
    for service_id in sorted(used - taken):
        service = services.get(service_id)
        if (
            service is not None
            and service["version_id"] == version["id"]
            and service["workers"] == part.workers
            and service["state"] == "running"
        ):
            return service_id
    return None


def scaling_body(scaling: Scaling) -> dict[str, Any]:
    """The control API's fields of a service's scaling."""
    return {
        "min_replicas": scaling.min_replicas,
        "max_replicas": scaling.max_replicas,
        "target_concurrency": scaling.target_concurrency,
        "replicas": scaling.initial,
    }


def _rescale(control: Control, service: dict[str, Any], scaling: Scaling) -> None:
    """A kept service given the part's scaling when it differs (no restart: its replicas follow)."""
    wanted = scaling_body(scaling)
    if any(service.get(key) != value for key, value in wanted.items() if key != "replicas"):
        control.call("PUT", f"/services/{quoted(service['id'])}/scaling", {**wanted, "replicas": None})


def _wait_running(control: Control, service_id: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        service = control.service(service_id)
        state, reason = service["state"], service.get("reason") or ""
        if state == "running":
            return
        if state in ("failed", "stopped") or (state == "starting" and reason):
            said = reason.split("; starting again in", 1)[0] or state
            raise WorkflowError(f"service {service_id} failed to start: {said}")
        if time.monotonic() > deadline:
            raise WorkflowError(f"service {service_id} was not running within {timeout:g} s")
        time.sleep(POLL_SECONDS)


def _endpoint_of(
    layout: Layout, chosen: dict[int, str], before: dict[str, Any] | None
) -> tuple[list[tuple[str, int]], tuple[str, int] | None]:
    """The routes and shadow of the endpoint: parts by the services chosen for them, `Previous` by
    the service that had the most weight (dropped, its weight going to the last part, when there
    was none or a part runs on it again)."""
    routes: list[tuple[str, int]] = []
    index, moved = 0, 0
    previous = max(_routes_of(before), key=lambda route: route[1])[0] if before else None
    for target, weight in layout.routes:
        if isinstance(target, Previous):
            if previous is None or previous in chosen.values():
                moved += weight
            else:
                routes.append((previous, weight))
            continue
        routes.append((chosen[index], weight))
        index += 1
    if moved:
        last = max(i for i, (sid, _) in enumerate(routes) if sid in chosen.values())
        routes[last] = (routes[last][0], routes[last][1] + moved)
    shadow = (chosen[index], layout.shadow[1]) if layout.shadow else None
    return routes, shadow


def _services_of(endpoint: dict[str, Any] | None) -> set[str]:
    if endpoint is None:
        return set()
    found = {route["service_id"] for route in endpoint["routes"]}
    return found | ({endpoint["shadow_service_id"]} if endpoint.get("shadow_service_id") else set())


def _routes_of(endpoint: dict[str, Any]) -> list[tuple[str, int]]:
    return [(route["service_id"], route["weight"]) for route in endpoint["routes"]]


def _shadow_of(endpoint: dict[str, Any]) -> tuple[str, int] | None:
    shadow = endpoint.get("shadow_service_id")
    return (shadow, endpoint["shadow_percent"]) if shadow else None


def remove_service(control: Control, service_id: str) -> None:
    """Stop and delete a service (its drain is the server's own: SIGTERM answers what it holds)."""
    with contextlib.suppress(ControlError):
        control.call("POST", f"/services/{quoted(service_id)}/stop")
    with contextlib.suppress(ControlError):
        control.call("DELETE", f"/services/{quoted(service_id)}")
