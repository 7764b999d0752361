"""--engine ray: a local Ray cluster, two replicas of one iris Seldon component (V2 and Seldon's
route on the Ray Serve proxy), each route answered by both replicas, then a clean shutdown.

Runs wherever ray is importable; CI installs it (the ``ray`` extra is part of ``dev``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import httpx
import pytest

from tests.servers import ROOT, RunningServer, serve

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")

#: scikit-learn is imported in load(): the command imports the class (to name the model) but only the
#: replicas load it, and importing it there too would cost the 60 s budget seconds.
IRIS_COMPONENT = """
class IrisModel:
    def load(self):
        from sklearn.datasets import load_iris
        from sklearn.linear_model import LogisticRegression

        features, labels = load_iris(return_X_y=True)
        self.clf = LogisticRegression(max_iter=1000).fit(features, labels)

    def predict(self, X, features_names=None):
        return self.clf.predict_proba(X)

    def tags(self):
        import threading

        return {"thread": threading.current_thread().name}
"""
ROW = [5.1, 3.5, 1.4, 0.2]
V2_REQUEST = {"inputs": [{"name": "input-0", "shape": [1, 4], "datatype": "FP64", "data": ROW}]}
SELDON_REQUEST = {"data": {"ndarray": [ROW]}}
REPLICA = "x-inferd-replica"


@pytest.fixture(scope="module")
def on_ray(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """``inferd serve IrisModel --dialect seldon --engine ray --replicas 2`` from the component's
    folder (a module name, resolved in the replicas as in the command's working directory)."""
    folder = tmp_path_factory.mktemp("ray-iris")
    (folder / "IrisModel.py").write_text(IRIS_COMPONENT)
    args = ("--dialect", "seldon", "--engine", "ray", "--replicas", "2", "--ray-num-cpus", "0.5")
    # PYTHONPATH: this checkout's inferd, whatever the folder (the engine hands it on to the replicas).
    with serve("IrisModel", *args, cwd=folder, env={"PYTHONPATH": str(ROOT)}) as server:
        yield server
    assert server.process.returncode == 0, server.log


def replicas_answering(client: httpx.Client, path: str, body: object, attempts: int = 60) -> set[str]:
    """The replicas that answered ``POST path`` (each answer checked), until two did."""
    seen: set[str] = set()
    for _ in range(attempts):
        response = client.post(path, json=body)
        assert response.status_code == 200, response.text
        seen.add(response.headers[REPLICA])
        if len(seen) == 2:
            break
    return seen


def test_v2_and_the_seldon_route_are_answered_by_both_replicas(on_ray: RunningServer) -> None:
    server = on_ray
    with httpx.Client(base_url=server.http_url, timeout=30) as client:
        assert client.get("/v2/health/ready").status_code == 200
        v2 = client.post("/v2/models/irismodel/infer", json=V2_REQUEST).json()
        probabilities = v2["outputs"][0]["data"]
        assert len(probabilities) == 3 and probabilities[0] > 0.9  # setosa
        seldon = client.post("/api/v1.0/predictions", json=SELDON_REQUEST).json()
        assert seldon["data"]["ndarray"][0] == pytest.approx(probabilities, rel=1e-5)
        v2_replicas = replicas_answering(client, "/v2/models/irismodel/infer", V2_REQUEST)
        seldon_replicas = replicas_answering(client, "/api/v1.0/predictions", SELDON_REQUEST)
    assert len(v2_replicas) == 2 and v2_replicas == seldon_replicas


def test_bad_input_is_a_400_from_the_replica(on_ray: RunningServer) -> None:
    server = on_ray
    response = httpx.post(f"{server.http_url}/v2/models/irismodel/infer", json={"inputs": "x"}, timeout=30)
    assert response.status_code == 400
    assert "error" in response.json() and REPLICA in response.headers
    assert len(response.headers.get_list("x-request-id")) == 1


def test_the_app_runs_on_the_replicas_own_loop(on_ray: RunningServer) -> None:
    """``ray_user_code_thread`` is off: the component is called on the replica's event loop, not on
    the thread Ray Serve starts for user code (``_run_user_code_event_loop``) by default."""
    server = on_ray
    answer = httpx.post(f"{server.http_url}/api/v1.0/predictions", json=SELDON_REQUEST, timeout=30).json()
    thread = answer["meta"]["tags"]["thread"]
    assert thread and "user_code" not in thread
