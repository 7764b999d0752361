"""``inferd platform export-k8s``: a platform deployment as Kubernetes manifests, read through the
control API. Each service an endpoint routes to (or mirrors to) becomes a Deployment and a Service
running its version's image; each endpoint a Gateway API ``HTTPRoute`` under ``/e/NAME`` (as the
gateway serves it) whose ``backendRefs`` carry the endpoint's weights, and whose ``RequestMirror``
filter copies the shadow's share. One YAML file per service and per endpoint, for ``kubectl apply -f
DIR``. A service that autoscales (``min_replicas < max_replicas``) gets a HorizontalPodAutoscaler
on the requests in flight per pod."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inferd.deploy.image import kubernetes_name
from inferd.deploy.k8s import Manifest, concurrency_autoscaler, http_route, to_yaml, workload
from inferd.platform.workflows.control import Control, quoted
from inferd.platform.workflows.layout import WorkflowError

#: The image of a version, by default: ``{deployment}`` and ``{label}`` as Kubernetes names, also
#: ``{version}`` (its id) and ``{digest}`` (12 hex digits of its content).
DEFAULT_IMAGE = "{deployment}:{label}"


@dataclass(frozen=True)
class Target:
    """Where the routes attach: the Gateway's name (and namespace), the host names they answer."""

    gateway: str
    gateway_namespace: str | None = None
    hostnames: tuple[str, ...] = ()
    image: str = DEFAULT_IMAGE


def export(control: Control, deployment: str, target: Target) -> dict[str, str]:
    """File name → YAML text: ``service-<name>.yaml`` per service, ``endpoint-<name>.yaml`` per
    endpoint. WorkflowError when the deployment has no endpoint."""
    found = control.call("GET", f"/deployments/{quoted(deployment)}")
    endpoints: list[dict[str, Any]] = control.call("GET", f"/deployments/{found['id']}/endpoints")
    if not endpoints:
        raise WorkflowError(f"deployment {found['name']!r} has no endpoint to export: route one first")
    services = {s["id"]: s for s in control.call("GET", f"/deployments/{found['id']}/services")}
    versions = {v["id"]: v for v in control.call("GET", f"/deployments/{found['id']}/versions")}
    names = {sid: kubernetes_name(f"{found['name']}-{sid}") for sid in services}
    files: dict[str, str] = {}
    for endpoint in endpoints:
        used = [route["service_id"] for route in endpoint["routes"]]
        if endpoint.get("shadow_service_id"):
            used.append(endpoint["shadow_service_id"])
        for service_id in used:
            service = services[service_id]
            manifests = _service(service, versions[service["version_id"]], names[service_id], found, target)
            files[f"service-{names[service_id]}.yaml"] = to_yaml(manifests)
        route = _route(endpoint, names, target)
        files[f"endpoint-{route['metadata']['name']}.yaml"] = to_yaml([route])
    return files


def _service(
    service: dict[str, Any], version: dict[str, Any], name: str, deployment: dict[str, Any], target: Target
) -> list[Manifest]:
    """The service's server: ``inferd serve`` on its version's target (relative to the image's
    working directory, the project's folder), with its workers and environment; ``min_replicas`` pods,
    and an HPA between its bounds when it autoscales (`concurrency_autoscaler`: on the requests each
    pod holds, aiming at its ``target_concurrency``, as the platform's autoscaler does)."""
    if service.get("engine", "local") != "local":
        raise WorkflowError(
            f"service {service['id']} runs on {service['engine']}: export-k8s writes local services "
            "(use inferd export k8s --target rayservice for Ray)"
        )
    command = ["inferd", "serve", version["target"]]
    if version["dialect"] != "auto":
        command += ["--dialect", version["dialect"]]
    variables = {
        **version["environment"],
        **service["environment"],
        "INFERD_WORKERS": str(service["workers"]),
    }
    image = target.image.format(
        deployment=kubernetes_name(deployment["name"]),
        label=kubernetes_name(version["label"]),
        version=version["id"],
        digest=version["digest"].removeprefix("sha256:")[:12],
    )
    low, high = max(1, int(service.get("min_replicas", 1))), int(service.get("max_replicas", 1))
    manifests = workload(name, image, command, variables, replicas=low)
    if high > low:
        per_pod = float(service.get("target_concurrency", 1.0))
        manifests.append(concurrency_autoscaler(name, low, high, per_pod))
    return manifests


def _route(endpoint: dict[str, Any], names: dict[str, str], target: Target) -> Manifest:
    backends = [(names[route["service_id"]], route["weight"]) for route in endpoint["routes"]]
    shadow = endpoint.get("shadow_service_id")
    mirror = (names[shadow], endpoint["shadow_percent"]) if shadow and endpoint["shadow_percent"] else None
    return http_route(
        kubernetes_name(endpoint["name"]),
        f"/e/{endpoint['name']}",
        backends,
        target.gateway,
        target.gateway_namespace,
        mirror,
        target.hostnames,
    )
