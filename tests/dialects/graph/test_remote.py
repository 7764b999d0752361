"""Graphs across servers: a SeldonDeployment whose nodes are partly another inferd server's Seldon
component (over REST and gRPC), a failing node, and remote nodes that cannot be reached."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.dialects.graph.conftest import COMPONENTS, predict, write_graph
from tests.servers import RunningServer, free_port, inferd_command, serve, served

#: Components named by class (MODEL_NAME, target: Router) import from the components folder.
ENV = {"PYTHONPATH": os.pathsep.join(filter(None, [str(COMPONENTS), os.environ.get("PYTHONPATH")]))}
DEPLOYMENT = """
apiVersion: machinelearning.seldon.io/v1
kind: SeldonDeployment
metadata: {name: spanning}
spec:
  predictors:
  - name: main
    componentSpecs:
    - spec:
        containers:
        - {name: router, image: example/router:1.0, env: [{name: MODEL_NAME, value: Router}]}
    graph:
      name: negate
      type: OUTPUT_TRANSFORMER
      endpoint: {service_host: 127.0.0.1, service_port: ${HTTP}, type: REST}
      children:
      - name: add-one
        type: TRANSFORMER
        endpoint: {service_host: 127.0.0.1, service_port: ${GRPC}, type: GRPC}
        children:
        - name: router
          type: ROUTER
          endpoint: {type: REST}
          children:
          - name: rest-model
            type: MODEL
            endpoint: {service_host: 127.0.0.1, httpPort: ${HTTP}, type: REST}
          - name: combiner
            type: COMBINER
            endpoint: {service_host: 127.0.0.1, service_port: ${HTTP}, type: REST}
            children:
            - name: grpc-model
              type: MODEL
              endpoint: {service_host: 127.0.0.1, grpcPort: ${GRPC}, type: GRPC}
            - {name: local-model, type: MODEL, target: Doubler}
          - {name: failing, type: MODEL, target: Failing}
"""
FRAGILE = """
name: fragile
graph:
  name: router
  type: ROUTER
  target: Router
  children:
  - name: remote
    type: MODEL
    endpoint: {host: 127.0.0.1, port: ${PORT}, type: ${TYPE}}
  - {name: local, type: MODEL, target: Doubler}
"""


#: Another inferd server: one Seldon component answering every method.
remote = served(lambda: serve("Remote", "--dialect", "seldon", env=ENV), scope="module")


@pytest.fixture(scope="module")
def spanning(remote: RunningServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    assert remote.grpc_address is not None
    ports = {"HTTP": remote.http_url.rsplit(":", 1)[1], "GRPC": remote.grpc_address.rsplit(":", 1)[1]}
    path = write_graph(tmp_path_factory.mktemp("spanning"), "deployment.yaml", DEPLOYMENT, **ports)
    with serve(str(path), env=ENV) as server:
        yield server


def test_a_seldon_deployment_is_served_under_its_predictor(spanning: RunningServer) -> None:
    assert spanning.models == ["main"]


def test_remote_model_over_rest(spanning: RunningServer) -> None:
    """[[-1, 5]] + 1 (gRPC) → route 0 → x3 (REST) → negated (REST): [[0, -18]]."""
    answer = predict(spanning.http_url, [[-1, 5]]).json()
    assert answer["data"]["ndarray"] == [[0, -18]]
    assert answer["meta"]["routing"] == {"add-one": -1, "router": 0, "rest-model": -1, "negate": -1}
    path = answer["meta"]["requestPath"]
    assert set(path) == {"add-one", "rest-model", "negate"}  # a router's answer is no step of the path
    assert path["rest-model"].startswith("http://127.0.0.1:")


def test_remote_combiner_over_a_grpc_and_a_local_model(spanning: RunningServer) -> None:
    """[[0, 5]] + 1 → route 1 → combiner (REST) of x3 (gRPC) [[3, 18]] and x2 (local) [[2, 12]]."""
    answer = predict(spanning.http_url, [[0, 5]]).json()
    assert answer["data"]["ndarray"] == [[-5, -30]]
    assert {"grpc-model", "local-model", "combiner"} <= set(answer["meta"]["requestPath"])


def test_a_failing_node_answers_seldons_error_naming_it(spanning: RunningServer) -> None:
    response = predict(spanning.http_url, [[1, 5]])
    assert response.status_code == 500
    assert response.json() == {
        "status": {
            "status": 1,
            "code": -1,
            "info": "node 'failing': boom: the model is broken",
            "reason": "MICROSERVICE_INTERNAL_ERROR",
        }
    }
    assert predict(spanning.http_url, [[-1, 5]]).status_code == 200


def test_a_remote_node_error_keeps_its_status(spanning: RunningServer) -> None:
    """Bad data reaches the gRPC transformer first: its INVALID_ARGUMENT is a 400 naming it."""
    response = httpx.post(f"{spanning.http_url}/api/v1.0/predictions", json={"data": {"ndarray": "x"}})
    assert response.status_code == 400
    assert response.json()["status"]["info"].startswith("node 'add-one': ")


@pytest.mark.parametrize("protocol", ["REST", "GRPC"])
def test_a_node_gone_at_request_time_is_503_and_the_rest_still_answers(protocol: str, tmp_path: Path) -> None:
    with serve("Remote", "--dialect", "seldon", env=ENV) as gone:
        assert gone.grpc_address is not None
        port = gone.http_url if protocol == "REST" else gone.grpc_address
        path = write_graph(tmp_path, "fragile.yaml", FRAGILE, PORT=port.rsplit(":", 1)[1], TYPE=protocol)
        with serve(str(path), env=ENV) as graph:
            assert predict(graph.http_url, [[0, 1]]).json()["data"]["ndarray"] == [[0, 3]]
            gone.process.terminate()
            gone.process.wait(timeout=30)
            response = predict(graph.http_url, [[0, 1]])
            assert response.status_code == 503
            info = response.json()["status"]["info"]
            assert info.startswith("node 'remote': is unreachable at "), info
            assert predict(graph.http_url, [[1, 1]]).json()["data"]["ndarray"] == [[2, 2]]
            v2 = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP64", "data": [0, 1]}]}
            assert httpx.post(f"{graph.http_url}/v2/models/fragile/infer", json=v2).status_code == 503


@pytest.mark.parametrize("protocol", ["REST", "GRPC"])
def test_a_node_unreachable_at_start_up_stops_the_server(protocol: str, tmp_path: Path) -> None:
    path = write_graph(tmp_path, "fragile.yaml", FRAGILE, PORT=free_port(), TYPE=protocol)
    env = {**os.environ, **ENV, "INFERD_GRAPH_STARTUP_TIMEOUT": "0.3"}
    done = subprocess.run(
        inferd_command("serve", str(path), "--port", "0", "--grpc-port", "0"),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode != 0
    assert "node 'remote': is unreachable at " in done.stderr
    assert "inferd ready" not in done.stdout
