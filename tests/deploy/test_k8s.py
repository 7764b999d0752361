"""inferd export k8s: each kind's manifests for the iris example, validated offline (the built-in
kinds against Kubernetes' own schemas by kubernetes-validate, the custom resources against the small
schemas in tests/deploy/schemas and, for the RayService's Serve config, Ray's own schema)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.conftest import IRIS
from tests.servers import ROOT, inferd_command

SCHEMAS = Path(__file__).parent / "schemas"
KUBERNETES = "1.30"
IMAGE = "registry.example/iris:1"


def export(*args: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        inferd_command("export", "k8s", *args), capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    return [document for document in yaml.safe_load_all(done.stdout) if document]


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / f"{name}.json").read_text())
    return loaded


def valid_pod(containers: list[dict[str, Any]]) -> None:
    """Containers of a custom resource checked as a Pod's, against Kubernetes' schema."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "check"},
        "spec": {"containers": containers},
    }
    kubernetes_validate.validate(pod, KUBERNETES, strict=True)


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {item["name"]: item["value"] for item in container["env"]}


def test_deployment_service_and_hpa_are_valid_kubernetes() -> None:
    documents = export(IRIS, "--target", "deployment", "--image", IMAGE, "--autoscale", "2:6",
                       "--max-batch-size", "16")  # fmt: skip
    assert [document["kind"] for document in documents] == [
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
    ]
    for document in documents:
        kubernetes_validate.validate(document, KUBERNETES, strict=True)
    deployment, service, hpa = documents
    assert {document["metadata"]["name"] for document in documents} == {"iris"}
    pod = deployment["spec"]["template"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    (container,) = pod["spec"]["containers"]
    assert container["image"] == IMAGE
    assert container["command"] == ["inferd", "serve", "/app"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": 8080}
    assert container["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
    assert env_of(container) == {
        "INFERD_HOST": "0.0.0.0",
        "INFERD_PORT": "8080",
        "INFERD_GRPC_PORT": "8081",
        "INFERD_MAX_BATCH_SIZE": "16",
    }
    assert {port["name"]: port["port"] for port in service["spec"]["ports"]} == {"http": 8080, "grpc": 8081}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
    assert hpa["spec"]["scaleTargetRef"]["name"] == "iris"
    assert "replicas" not in deployment["spec"]  # the HPA owns the count


def test_a_file_target_is_named_inside_the_image_and_replicas_fix_the_count() -> None:
    deployment, _, hpa = export(f"{IRIS}/model.py:Iris", "--name", "Iris_Model", "--replicas", "3")
    assert deployment["metadata"]["name"] == "iris-model"
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][-1] == "/app/model.py:Iris"
    assert container["image"] == "iris-model:latest"  # what `inferd build --name Iris_Model` tags
    assert env_of(container)["INFERD_NAME"] == "Iris_Model"
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (3, 3)


def test_kserve_inference_service_with_a_custom_container() -> None:
    (service,) = export(IRIS, "--target", "kserve", "--image", IMAGE, "--autoscale", "0:3")
    jsonschema.validate(service, schema("inferenceservice"))
    predictor = service["spec"]["predictor"]
    assert (predictor["minReplicas"], predictor["maxReplicas"]) == (0, 3)
    valid_pod(predictor["containers"])
    (container,) = predictor["containers"]
    assert container["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    assert env_of(container)["INFERD_GRPC_ENABLED"] == "false"
    assert container["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"


def test_kuberay_rayservice_runs_inferds_serve_application() -> None:
    (service,) = export(
        IRIS, "--target", "rayservice", "--image", IMAGE, "--autoscale", "1:4", "--ray-haproxy"
    )
    jsonschema.validate(service, schema("rayservice"))
    cluster = service["spec"]["rayClusterConfig"]
    head = cluster["headGroupSpec"]["template"]["spec"]["containers"]
    (workers,) = cluster["workerGroupSpecs"]
    valid_pod(head)
    valid_pod(workers["template"]["spec"]["containers"])
    assert cluster["enableInTreeAutoscaling"] is True
    assert (workers["minReplicas"], workers["maxReplicas"]) == (1, 4)
    assert env_of(head[0]) == {"RAY_SERVE_ENABLE_HA_PROXY": "1"}
    assert {port["containerPort"] for port in head[0]["ports"]} >= {6379, 8000}
    config = yaml.safe_load(service["spec"]["serveConfigV2"])
    jsonschema.validate(config, schema("serveconfig"))
    (application,) = config["applications"]
    assert application["import_path"] == "inferd.engines.ray:app_builder"
    assert application["args"] == {"target": "/app", "workdir": "/app", "autoscale": "1:4"}


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")
def test_the_serve_config_is_valid_for_ray_and_its_builder_takes_the_arguments() -> None:
    from ray import serve
    from ray.serve.schema import ServeDeploySchema

    from inferd.config.settings import Settings
    from inferd.engines.ray import app_builder, deployment_options

    (service,) = export(IRIS, "--target", "rayservice", "--autoscale", "1:4")
    config = yaml.safe_load(service["spec"]["serveConfigV2"])
    ServeDeploySchema.model_validate(config)
    args = config["applications"][0]["args"]
    assert isinstance(app_builder(args), serve.Application)
    options = deployment_options(Settings(**{k: v for k, v in args.items() if k != "workdir"}))
    assert options["autoscaling_config"]["max_replicas"] == 4
    assert options["max_ongoing_requests"] > 5  # not Ray's default


def test_an_unknown_kind_exits_2() -> None:
    done = subprocess.run(
        inferd_command("export", "k8s", IRIS, "--target", "statefulset"),
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 2
    assert "deployment, kserve, rayservice" in done.stderr


def test_inferd_yaml_names_the_resources_and_its_engine_picks_the_rayservice(tmp_path: Path) -> None:
    """A project made by ``inferd init``: its inferd.yaml's ``name`` names the resources, ``engine:
    ray`` makes a RayService the default, and the Serve application gets the file's settings (Ray's
    builder reads no project file) with the handler as the image holds it."""
    project = tmp_path / "shop"
    made = subprocess.run(
        inferd_command("init", str(project), "--dialect", "abeja"), capture_output=True, text=True, timeout=60
    )
    assert made.returncode == 0, made.stderr
    settings = yaml.safe_load((project / "inferd.yaml").read_text())
    (project / "inferd.yaml").write_text(yaml.safe_dump({**settings, "name": "Scorer", "engine": "ray"}))
    (service,) = export(str(project))
    assert service["kind"] == "RayService" and service["metadata"]["name"] == "scorer"
    (application,) = yaml.safe_load(service["spec"]["serveConfigV2"])["applications"]
    assert application["args"] == {
        "target": "main:handler",
        "workdir": "/app",
        "dialect": "abeja",
        "name": "Scorer",
    }
    head = service["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert head["image"] == "scorer:latest"
    deployment, service_, _ = export(str(project), "--target", "deployment")
    assert deployment["metadata"]["name"] == service_["metadata"]["name"] == "scorer"
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    # the image's server reads its copy of inferd.yaml in /app: nothing of it is repeated
    assert container["command"] == ["inferd", "serve", "/app"]
    assert "INFERD_NAME" not in env_of(container) and "INFERD_DIALECT" not in env_of(container)
