"""--engine ray with an inference graph: output transformer -> transformer -> model, three Seldon
classes, each node a Ray Serve deployment of its own behind the graph's ingress, which calls them
through deployment handles. The same requests to the same graph served locally must get the same
answers; Ray Serve's own status must list the node deployments, each with its replicas.

The local Ray is started here, by the engine's own `ray_cluster` (so this process can ask Serve for
its status), and the server joins it with ``--ray-address``. Runs wherever ray is importable; CI
installs it.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from inferd.config.settings import Settings
from tests.servers import RunningServer, serve

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")

COMPONENTS = {
    "AddOne.py": """
class AddOne:
    def transform_input(self, X, names, meta=None):
        return X + 1
""",
    "Doubler.py": """
import json


class Doubler:
    def __init__(self, log):
        self.log = log

    def predict(self, X, names, meta=None):
        if X.sum() > 1000:
            raise ValueError("too large for doubling")
        return X * 2

    def send_feedback(self, features, names, reward, truth, routing=None):
        with open(self.log, "a") as out:
            out.write(json.dumps({"reward": reward}) + "\\n")
        return []
""",
    "Negate.py": """
class Negate:
    def transform_output(self, X, names, meta=None):
        return -X
""",
}
GRAPH = """
name: pipeline
graph:
  name: negate
  type: OUTPUT_TRANSFORMER
  target: Negate
  children:
  - name: add-one
    type: TRANSFORMER
    target: AddOne
    children:
    - name: doubler
      type: MODEL
      target: Doubler
      replicas: 2
      num_cpus: 0.1
      parameters: [{name: log, value: "${LOG}", type: STRING}]
"""
REQUEST = {"data": {"ndarray": [[1.0, 2.0]]}, "meta": {"puid": "fixed-puid"}}
NODES = {"node-negate": 1, "node-add-one": 1, "node-doubler": 2}


@dataclass
class Servers:
    ray: RunningServer
    local: RunningServer
    feedback_log: Path

    def both(self, path: str, body: Any) -> tuple[httpx.Response, httpx.Response]:
        on_ray, local = (
            httpx.post(f"{server.http_url}{path}", json=body, timeout=30) for server in (self.ray, self.local)
        )
        return on_ray, local


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    """One local Ray for the module; the graph on it (``--engine ray --ray-address``) and the same
    graph served locally, from an absolute path (the replicas do not share the command's folder)."""
    from inferd.engines.ray import LOCAL_RAY_ENVIRONMENT, ray_cluster

    folder = tmp_path_factory.mktemp("ray-graph")
    for name, text in COMPONENTS.items():
        (folder / name).write_text(text)
    log = folder / "feedback.jsonl"
    graph = folder / "pipeline.yaml"
    graph.write_text(GRAPH.replace("${LOG}", str(log)))
    with ray_cluster(Settings()):
        import ray

        address = ray.get_runtime_context().gcs_address
        args = ("--engine", "ray", "--ray-address", address, "--ray-num-cpus", "0.25")
        # The cluster is loopback-only: the server's driver must not swap 127.0.0.1 for the machine's IP.
        with serve(str(graph), *args, env=LOCAL_RAY_ENVIRONMENT) as on_ray, serve(str(graph)) as local:
            yield Servers(on_ray, local, log)
        assert on_ray.process.returncode == 0, on_ray.log
        from ray import serve as ray_serve

        assert "inferd" not in ray_serve.status().applications  # deleted, the cluster left running


def test_each_node_is_a_deployment_of_its_own(servers: Servers) -> None:
    from ray import serve as ray_serve

    deployments = ray_serve.status().applications["inferd"].deployments
    assert set(deployments) == {"inferd", *NODES}
    for name, replicas in NODES.items():
        assert deployments[name].status == "HEALTHY"
        assert deployments[name].replica_states.get("RUNNING") == replicas, name


def test_a_prediction_on_ray_is_the_local_graphs(servers: Servers) -> None:
    """(([1, 2] + 1) * 2) negated, every node in meta.requestPath and meta.routing."""
    on_ray, local = servers.both("/api/v1.0/predictions", REQUEST)
    assert on_ray.status_code == local.status_code == 200, on_ray.text
    answer = on_ray.json()
    assert answer == local.json()
    assert answer["data"]["ndarray"] == [[-4.0, -6.0]]
    assert set(answer["meta"]["requestPath"]) == {"negate", "add-one", "doubler"}
    assert answer["meta"]["routing"] == {"negate": -1, "add-one": -1, "doubler": -1}
    assert on_ray.headers["Seldon-Puid"] == "fixed-puid"


def test_v2_on_ray_is_the_local_graphs(servers: Servers) -> None:
    body = {"inputs": [{"name": "input-0", "shape": [1, 2], "datatype": "FP64", "data": [1.0, 2.0]}]}
    on_ray, local = servers.both("/v2/models/pipeline/infer", body)
    assert on_ray.status_code == local.status_code == 200, on_ray.text
    assert on_ray.json()["outputs"] == local.json()["outputs"]
    assert on_ray.json()["outputs"][0]["data"] == [-4.0, -6.0]


def test_a_failing_node_answers_as_it_does_locally(servers: Servers) -> None:
    """The model's exception crosses the handle as data: the same status and body, naming the node."""
    on_ray, local = servers.both("/api/v1.0/predictions", {"data": {"ndarray": [[5000.0]]}})
    assert on_ray.status_code == local.status_code == 500
    assert on_ray.json() == local.json()
    assert on_ray.json()["status"]["info"] == "node 'doubler': too large for doubling"


def test_feedback_reaches_the_model_deployment(servers: Servers) -> None:
    answer = httpx.post(f"{servers.ray.http_url}/api/v1.0/predictions", json=REQUEST, timeout=30).json()
    feedback = {"request": REQUEST, "response": answer, "reward": 0.5}
    response = httpx.post(f"{servers.ray.http_url}/api/v1.0/feedback", json=feedback, timeout=30)
    assert response.status_code == 200, response.text
    assert [json.loads(line) for line in servers.feedback_log.read_text().splitlines()] == [{"reward": 0.5}]
