"""Kubernetes manifests for a model project's image: a plain Deployment (with its Service and
HorizontalPodAutoscaler), a KServe InferenceService with a custom container, or a KubeRay RayService;
and for a platform deployment (`inferd.platform.workflows.kubernetes`): a `workload` per service and a
Gateway API `http_route` per endpoint, splitting its requests by weight.

Every kind runs the same command, ``inferd serve`` on the target as the image holds it; settings
given on the command line travel as ``INFERD_*`` variables (the RayService: as the application's
arguments). Probes use V2's health routes, which every inferd server answers whatever its dialect.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from typing import Any

import yaml

from inferd.config.project import Project
from inferd.config.settings import Settings
from inferd.deploy.image import (
    APP_DIR,
    GRPC_PORT,
    HTTP_PORT,
    LIVE_PATH,
    PLACED,
    READY_PATH,
    environment,
    given,
    image_target,
    resource_name,
)

Manifest = dict[str, Any]
#: The CPU and memory a server container requests: the HPA's utilisation is relative to them.
REQUESTS = {"cpu": "1", "memory": "1Gi"}
CPU_TARGET_PERCENT = 70
#: The gauge of requests a server holds (`inferd.core.metrics.IN_FLIGHT`), by which a platform
#: service's HPA scales.
IN_FLIGHT_METRIC = "inferd_requests_in_flight"
#: How long a pod may take to load its models before Kubernetes restarts it: 60 x 5 s.
STARTUP_FAILURES = 60
RAY_SERVE_PORT = 8000
#: The Ray image tag when Ray is not installed here to tell its version.
RAY_VERSION = "2.60.0"
APP_BUILDER = "inferd.engines.ray:app_builder"


def _labels(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "inferd"}


def _metadata(name: str) -> dict[str, Any]:
    return {"name": name, "labels": _labels(name)}


def _env(variables: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": key, "value": value} for key, value in variables.items()]


def _probe(path: str, period: int, failures: int = 3) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": HTTP_PORT},
        "periodSeconds": period,
        "failureThreshold": failures,
    }


def _probes() -> dict[str, Any]:
    """Startup (model loading may be slow), then liveness and readiness on V2's health routes."""
    return {
        "startupProbe": _probe(LIVE_PATH, 5, STARTUP_FAILURES),
        "livenessProbe": _probe(LIVE_PATH, 10),
        "readinessProbe": _probe(READY_PATH, 5),
    }


def _server(project: Project, image: str, name: str, grpc: bool) -> dict[str, Any]:
    """The inferd container: the command, the settings as variables, its ports and probes."""
    ports = [{"name": "http", "containerPort": HTTP_PORT, "protocol": "TCP"}]
    if grpc:
        ports.append({"name": "grpc", "containerPort": GRPC_PORT, "protocol": "TCP"})
    variables = {
        "INFERD_HOST": "0.0.0.0",
        "INFERD_PORT": str(HTTP_PORT),
        **({"INFERD_GRPC_PORT": str(GRPC_PORT)} if grpc else {"INFERD_GRPC_ENABLED": "false"}),
        **environment(project),
    }
    return {
        "name": name,
        "image": image,
        "command": ["inferd", "serve", image_target(project)],
        "env": _env(variables),
        "ports": ports,
        **_probes(),
        "resources": {"requests": dict(REQUESTS)},
    }


def deployment(project: Project, image: str) -> list[Manifest]:
    """A Deployment, a Service (HTTP and gRPC) and an HPA on CPU owning the replica count (fixed at
    ``replicas`` unless ``autoscale`` gives a range)."""
    name, settings = resource_name(project), project.settings
    low, high = settings.autoscale_range
    pod = {
        "metadata": {"labels": _labels(name)},
        "spec": {
            "terminationGracePeriodSeconds": int(settings.graceful_timeout) + 5,
            "containers": [_server(project, image, "inferd", grpc=settings.grpc_enabled)],
        },
    }
    service_ports = [{"name": "http", "port": HTTP_PORT, "targetPort": "http", "protocol": "TCP"}]
    if settings.grpc_enabled:
        grpc_port = {"name": "grpc", "port": GRPC_PORT, "targetPort": "grpc", "protocol": "TCP"}
        service_ports.append({**grpc_port, "appProtocol": "grpc"})
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _metadata(name),
            "spec": {"selector": {"matchLabels": _labels(name)}, "template": pod},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _metadata(name),
            "spec": {"selector": _labels(name), "ports": service_ports},
        },
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": _metadata(name),
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                "minReplicas": max(low, 1),
                "maxReplicas": high,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": CPU_TARGET_PERCENT},
                        },
                    }
                ],
            },
        },
    ]


def workload(
    name: str, image: str, command: list[str], variables: dict[str, str], replicas: int = 1
) -> list[Manifest]:
    """A Deployment of ``replicas`` pods running ``command`` (an ``inferd serve``, HTTP on
    `HTTP_PORT`, gRPC off) in ``image`` with ``variables``, and its Service: what the platform exports
    for one service."""
    container = {
        "name": "inferd",
        "image": image,
        "command": command,
        "env": _env(
            {
                "INFERD_HOST": "0.0.0.0",
                "INFERD_PORT": str(HTTP_PORT),
                "INFERD_GRPC_ENABLED": "false",
                **variables,
            }
        ),
        "ports": [{"name": "http", "containerPort": HTTP_PORT, "protocol": "TCP"}],
        **_probes(),
        "resources": {"requests": dict(REQUESTS)},
    }
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _metadata(name),
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": _labels(name)},
                "template": {"metadata": {"labels": _labels(name)}, "spec": {"containers": [container]}},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _metadata(name),
            "spec": {
                "selector": _labels(name),
                "ports": [{"name": "http", "port": HTTP_PORT, "targetPort": "http", "protocol": "TCP"}],
            },
        },
    ]


def concurrency_autoscaler(name: str, low: int, high: int, target: float) -> Manifest:
    """An HPA (autoscaling/v2) keeping Deployment ``name`` between ``low`` and ``high`` pods by the
    requests each holds, `IN_FLIGHT_METRIC` averaged over its pods against ``target``: the rule of
    the platform's own autoscaler (``ceil(total in flight / target)`` pods), so a service scales on
    Kubernetes as it did on the platform. A Pods metric: the cluster needs a custom metrics adapter
    (prometheus-adapter) serving the pods' ``/metrics`` gauge, summed over its labels, by that name."""
    metric = {"name": IN_FLIGHT_METRIC}
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": _metadata(name),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": low,
            "maxReplicas": high,
            "metrics": [
                {
                    "type": "Pods",
                    "pods": {
                        "metric": metric,
                        "target": {"type": "AverageValue", "averageValue": quantity(target)},
                    },
                }
            ],
        },
    }


def quantity(value: float) -> str:
    """``value`` as a Kubernetes quantity: ``2`` for a whole number, else thousandths (``1500m``)."""
    if float(value).is_integer():
        return str(int(value))
    return f"{round(value * 1000)}m"


def http_route(
    name: str,
    path: str,
    backends: list[tuple[str, int]],
    gateway: str,
    gateway_namespace: str | None = None,
    mirror: tuple[str, int] | None = None,
    hostnames: tuple[str, ...] = (),
) -> Manifest:
    """A Gateway API (v1) HTTPRoute attached to ``gateway``: requests under ``path`` (a prefix, which
    is taken off) split over the Services ``backends`` (name, weight), and ``mirror`` (name, percent)
    sent a copy of that share of them."""
    parent: dict[str, Any] = {"name": gateway}
    if gateway_namespace:
        parent["namespace"] = gateway_namespace
    filters: list[dict[str, Any]] = [
        {
            "type": "URLRewrite",
            "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}},
        }
    ]
    if mirror is not None:
        shadow, percent = mirror
        copy: dict[str, Any] = {"backendRef": {"name": shadow, "port": HTTP_PORT}}
        if percent < 100:
            copy["percent"] = percent
        filters.append({"type": "RequestMirror", "requestMirror": copy})
    rule = {
        "matches": [{"path": {"type": "PathPrefix", "value": path}}],
        "filters": filters,
        "backendRefs": [
            {"name": service, "port": HTTP_PORT, "weight": weight} for service, weight in backends
        ],
    }
    spec: dict[str, Any] = {"parentRefs": [parent]}
    if hostnames:
        spec["hostnames"] = list(hostnames)
    spec["rules"] = [rule]
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": _metadata(name),
        "spec": spec,
    }


def kserve(project: Project, image: str) -> list[Manifest]:
    """A KServe InferenceService whose predictor is the inferd container (``kserve-container`` on
    8080, HTTP only: KServe routes one port), scaled between ``autoscale``'s bounds."""
    name, settings = resource_name(project), project.settings
    low, high = settings.autoscale_range
    container = _server(project, image, "kserve-container", grpc=False)
    container["ports"] = [{"containerPort": HTTP_PORT, "protocol": "TCP"}]
    return [
        {
            "apiVersion": "serving.kserve.io/v1beta1",
            "kind": "InferenceService",
            "metadata": _metadata(name),
            "spec": {"predictor": {"minReplicas": low, "maxReplicas": high, "containers": [container]}},
        }
    ]


def serve_config(project: Project) -> dict[str, Any]:
    """Ray Serve's config of the app: inferd's application builder with the settings as arguments
    (those of ``inferd.yaml`` too: the builder reads no project file)."""
    args: dict[str, Any] = {
        "target": image_target(project, inner=True),
        "workdir": APP_DIR,
        **given(project, leave_out=PLACED | {"ray_haproxy"}, with_file=True),
    }
    return {
        "applications": [
            {"name": "inferd", "route_prefix": "/", "import_path": APP_BUILDER, "args": args},
        ]
    }


def _ray_version() -> str:
    try:
        return metadata.version("ray")
    except metadata.PackageNotFoundError:
        return RAY_VERSION


def _ray_container(name: str, image: str, settings: Settings, ports: list[dict[str, Any]]) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": image, "resources": {"requests": dict(REQUESTS)}}
    if ports:
        container["ports"] = ports
    if settings.ray_haproxy:
        container["env"] = _env({"RAY_SERVE_ENABLE_HA_PROXY": "1"})
    return container


def rayservice(project: Project, image: str) -> list[Manifest]:
    """A KubeRay RayService: a Ray cluster of the image (Ray and inferd installed, the project in
    ``/app``) whose Serve application is inferd's; Ray's autoscaler adds worker pods when
    ``autoscale`` asks for more replicas than fit."""
    name, settings = resource_name(project), project.settings
    low, high = settings.autoscale_range
    head_ports = [
        {"name": "gcs-server", "containerPort": 6379},
        {"name": "dashboard", "containerPort": 8265},
        {"name": "client", "containerPort": 10001},
        {"name": "serve", "containerPort": RAY_SERVE_PORT},
    ]
    workers = {
        "groupName": "inferd",
        "replicas": max(low, 1),
        "minReplicas": max(low, 1),
        "maxReplicas": max(high, 1),
        "rayStartParams": {},
        "template": {"spec": {"containers": [_ray_container("ray-worker", image, settings, [])]}},
    }
    cluster = {
        "rayVersion": _ray_version(),
        "enableInTreeAutoscaling": settings.autoscale is not None,
        # The head runs Ray's control plane and proxy only; replicas go to the workers.
        "headGroupSpec": {
            "rayStartParams": {"dashboard-host": "0.0.0.0", "num-cpus": "0"},
            "template": {"spec": {"containers": [_ray_container("ray-head", image, settings, head_ports)]}},
        },
        "workerGroupSpecs": [workers],
    }
    return [
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayService",
            "metadata": _metadata(name),
            "spec": {
                "serveConfigV2": yaml.safe_dump(serve_config(project), sort_keys=False),
                "rayClusterConfig": cluster,
            },
        }
    ]


KINDS: dict[str, Callable[[Project, str], list[Manifest]]] = {
    "deployment": deployment,
    "kserve": kserve,
    "rayservice": rayservice,
}


def manifests(kind: str, project: Project, image: str) -> list[Manifest]:
    """The manifests of ``kind`` (one of ``KINDS``)."""
    return KINDS[kind](project, image)


def _string(dumper: Any, text: str) -> Any:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


#: The safe dumper, writing multi-line strings (the RayService's Serve config) as ``|`` blocks.
_Dumper: Any = type("_Dumper", (yaml.SafeDumper,), {})
_Dumper.add_representer(str, _string)


def to_yaml(documents: list[Manifest]) -> str:
    """The manifests as one multi-document YAML stream, for ``kubectl apply -f``."""
    text: str = yaml.dump_all(documents, Dumper=_Dumper, sort_keys=False)
    return text
