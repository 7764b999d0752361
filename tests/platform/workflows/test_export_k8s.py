"""``inferd platform export-k8s``: a deployment's endpoint (90/10 over two services of two versions) as a
Gateway API HTTPRoute with weighted backendRefs beside each service's Deployment and Service, read from
a running control process; a service that autoscales gets its replicas and a HorizontalPodAutoscaler on the
requests in flight per pod. The built-in kinds are validated by kubernetes-validate; the HTTPRoute by
tests/deploy/schemas/httproute.json (the v1 CRD's fields, types and bounds) and, here, the CRD's CEL
rules on what inferd writes; each backendRef names a Service of the export on its port."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

from inferd.deploy.k8s import http_route
from tests.deploy.test_k8s import KUBERNETES, schema
from tests.platform.test_control import control, project, wait_state
from tests.servers import ROOT, inferd_command


def valid_route(route: dict[str, Any]) -> None:
    """The JSON schema, then the v1 CRD's CEL rules that bear on what inferd writes."""
    jsonschema.validate(route, schema("httproute"))
    for rule in route["spec"]["rules"]:
        for ref in rule.get("backendRefs", []):  # "Must have port for Service reference"
            assert ref.get("kind", "Service") != "Service" or "port" in ref
        rewrites = [f for f in rule.get("filters", []) if f["type"] == "URLRewrite"]
        assert len(rewrites) <= 1  # each filter type but RequestMirror at most once per rule
        for rewrite in rewrites:
            path = rewrite["urlRewrite"]["path"]
            if path["type"] == "ReplacePrefixMatch":
                assert "replacePrefixMatch" in path
                # "exactly one PathPrefix match must be specified" with replacePrefixMatch
                assert [m["path"]["type"] for m in rule["matches"]] == ["PathPrefix"]
        for mirror in (f for f in rule.get("filters", []) if f["type"] == "RequestMirror"):
            assert "port" in mirror["requestMirror"]["backendRef"]


def test_a_route_with_a_shadow_mirrors_its_share() -> None:
    route = http_route("main", "/e/main", [("a", 100)], "gw", "infra", ("s", 20), ("api.example.com",))
    valid_route(route)
    (rule,) = route["spec"]["rules"]
    assert rule["filters"][1] == {
        "type": "RequestMirror",
        "requestMirror": {"backendRef": {"name": "s", "port": 8080}, "percent": 20},
    }
    assert route["spec"]["parentRefs"] == [{"name": "gw", "namespace": "infra"}]
    whole = http_route("main", "/e/main", [("a", 100)], "gw", mirror=("s", 100))
    assert "percent" not in whole["spec"]["rules"][0]["filters"][1]["requestMirror"]


def test_an_endpoint_exports_as_a_weighted_http_route_beside_its_services(tmp_path: Path) -> None:
    with control(tmp_path / "data") as running:
        assert running.verb("create-deployment", "iris").returncode == 0
        versions, services = [], []
        # the first autoscales between 2 and 4 replicas, the second runs one
        scalings = ({"min_replicas": 2, "max_replicas": 4, "target_concurrency": 2.5}, {})
        for (label, factor), scaling in zip((("1.0", 1.0), ("2.0", 2.0)), scalings, strict=True):
            pushed = running.verb(
                "push", "iris", str(project(tmp_path / label, factor)), "--label", label, "--json"
            )
            assert pushed.returncode == 0, pushed.stderr
            versions.append(json.loads(pushed.stdout))
            created = running.call(
                "POST",
                "/deployments/iris/services",
                json={"version": versions[-1]["id"], "environment": {"COLOUR": label}, **scaling},
            )
            services.append(created.json()["id"])
        for service in services:
            wait_state(running, service, "running")
        routed = running.verb("route", "iris", "main", f"{services[0]}=90", f"{services[1]}=10")
        assert routed.returncode == 0, routed.stderr

        out = tmp_path / "k8s"
        api = running.api.removesuffix("/platform/v1")
        done = subprocess.run(
            inferd_command(
                "platform", "export-k8s", "iris", "--output", str(out), "--url", api,
                "--gateway", "public", "--hostname", "models.example.com",
                "--image", "registry.example/{deployment}:{label}",
            ),
            capture_output=True, text=True, timeout=120, env=running.cli_env(), cwd=ROOT,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr

    names = {f"iris-{service}" for service in services}
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["endpoint-main.yaml", *(f"service-{name}.yaml" for name in names)]
    )
    (route,) = yaml.safe_load_all((out / "endpoint-main.yaml").read_text())
    valid_route(route)
    (rule,) = route["spec"]["rules"]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/e/main"}}]
    assert [(ref["name"], ref["weight"]) for ref in rule["backendRefs"]] == [
        (f"iris-{services[0]}", 90),
        (f"iris-{services[1]}", 10),
    ]
    assert route["spec"]["parentRefs"] == [{"name": "public"}]
    assert route["spec"]["hostnames"] == ["models.example.com"]

    ports: dict[str, set[int]] = {}
    for index, service in enumerate(services):
        documents = list(yaml.safe_load_all((out / f"service-iris-{service}.yaml").read_text()))
        for document in documents:
            kubernetes_validate.validate(document, KUBERNETES, strict=True)
        deployment, k8s_service, *autoscaler = documents
        ports[k8s_service["metadata"]["name"]] = {port["port"] for port in k8s_service["spec"]["ports"]}
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert container["image"] == f"registry.example/iris:{versions[index]['label'].replace('.', '-')}"
        assert container["command"] == ["inferd", "serve", "."]
        env = {item["name"]: item["value"] for item in container["env"]}
        assert env["COLOUR"] == versions[index]["label"] and env["INFERD_WORKERS"] == "1"
        assert k8s_service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
        assert deployment["spec"]["replicas"] == (2, 1)[index]
        assert [hpa["kind"] for hpa in autoscaler] == (["HorizontalPodAutoscaler"], [])[index]
    (hpa,) = list(yaml.safe_load_all((out / f"service-iris-{services[0]}.yaml").read_text()))[2:]
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": f"iris-{services[0]}",
    }
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 4)
    assert hpa["spec"]["metrics"] == [
        {
            "type": "Pods",
            "pods": {
                "metric": {"name": "inferd_requests_in_flight"},
                "target": {"type": "AverageValue", "averageValue": "2500m"},
            },
        }
    ]
    for ref in rule["backendRefs"]:
        assert ref["port"] in ports[ref["name"]]


def test_a_deployment_without_endpoints_is_refused(tmp_path: Path) -> None:
    with control(tmp_path / "data") as running:
        assert running.verb("create-deployment", "empty").returncode == 0
        refused = running.verb("export-k8s", "empty", "--output", str(tmp_path / "k8s"))
        assert refused.returncode == 1 and "no endpoint" in refused.stderr, refused.stderr
        missing = running.verb("export-k8s", "nope", "--output", str(tmp_path / "k8s"))
        assert missing.returncode == 1 and "nope" in missing.stderr
    assert not (tmp_path / "k8s").exists()
