"""``inferd apply``: a SeldonDeployment whose two predictors split the traffic 75/25 (counted by
whose answer came back), the same file again with the second predictor as a shadow (the first kept,
not restarted), Seldon's SKLEARN_SERVER on a model folder beside the file, prepackaged servers inferd
cannot run refused, and a KServe InferenceService rolled out with ``canaryTrafficPercent`` then
promoted."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from tests.models.sklearn_folder import ROWS, sklearn_model_folder
from tests.platform.test_control import Control
from tests.platform.workflows.conftest import verb, write

COMPONENTS = {
    "Doubler.py": """
        class Doubler:
            def predict(self, X, names, meta=None):
                return X * 2
    """,
    "Tripler.py": """
        class Tripler:
            def predict(self, X, names, meta=None):
                return X * 3
    """,
}
SELDON = """
apiVersion: machinelearning.seldon.io/v1
kind: SeldonDeployment
metadata: {name: arith}
spec:
  predictors:
  - name: double
    traffic: ${FIRST}
    componentSpecs:
    - spec:
        containers:
        - {name: model, image: example/doubler:1.0, env: [{name: MODEL_NAME, value: Doubler}]}
    graph: {name: model, type: MODEL}
  - name: triple
    ${SECOND}
    componentSpecs:
    - spec:
        containers:
        - {name: model, image: example/tripler:1.0, env: [{name: MODEL_NAME, value: Tripler}]}
    graph: {name: model, type: MODEL}
"""
REQUESTS = 1000


def seldon(folder: Path, first: int, second: str) -> Path:
    write(folder, COMPONENTS)
    path = folder / "arith.yaml"
    path.write_text(SELDON.replace("${FIRST}", str(first)).replace("${SECOND}", second))
    return path


def origins(gateway: str, name: str, count: int, path: str, body: Any, read: Any) -> Counter[Any]:
    found: Counter[Any] = Counter()
    with httpx.Client(timeout=30) as http:
        for _ in range(count):
            answer = http.post(f"{gateway}/e/{name}{path}", json=body)
            assert answer.status_code == 200, answer.text
            found[read(answer.json())] += 1
    return found


def seldon_origins(gateway: str, count: int) -> Counter[Any]:
    body = {"data": {"ndarray": [[1.0]]}}
    return origins(
        gateway, "arith", count, "/api/v1.0/predictions", body, lambda a: a["data"]["ndarray"][0][0]
    )


def test_seldon_traffic_split_then_shadow(platform: Control, tmp_path: Path) -> None:
    path = seldon(tmp_path / "seldon", 75, "traffic: 25")
    applied = verb(platform, "apply", str(path))
    assert applied.returncode == 0, applied.stderr
    split = seldon_origins(platform.gateway, REQUESTS)
    assert set(split) == {2.0, 3.0}
    assert abs(split[2.0] / REQUESTS - 0.75) < 0.06, split  # 4.4 standard deviations
    services = platform.call("GET", "/deployments/arith/services").json()
    assert len(services) == 2

    seldon(tmp_path / "seldon", 100, "shadow: true")
    shadowed = verb(platform, "apply", str(path), "--json")
    assert shadowed.returncode == 0, shadowed.stderr
    outcome = json.loads(shadowed.stdout)[0]
    double = next(s["id"] for s in services if s["id"] in outcome["kept"])  # not restarted
    assert outcome["routes"] == [[double, 100]] and outcome["shadow"][1] == 100
    assert outcome["started"] == [] and outcome["retired"] == []  # only the traffic changed
    assert seldon_origins(platform.gateway, 50) == Counter({2.0: 50})
    got = json.loads(verb(platform, "get", "arith", "--json").stdout)
    shadow = next(s for s in got["services"] if s["shadow"])
    assert shadow["metrics"]["requests"] > 0  # the copies reached it; their answers were dropped
    assert verb(platform, "delete", "arith").returncode == 0


def test_seldon_refusals(platform: Control, tmp_path: Path) -> None:
    path = seldon(tmp_path / "bad", 75, "traffic: 30")
    refused = verb(platform, "apply", str(path))
    assert refused.returncode == 2 and "sum to 100, not 105" in refused.stderr
    prepackaged = tmp_path / "bad" / "sklearn.yaml"
    for implementation, uri, problem in [
        (
            "HUGGINGFACE_SERVER",
            "gs://seldon-models/hf/gpt2",
            "node 'clf': implementation 'HUGGINGFACE_SERVER'",
        ),
        ("SKLEARN_SERVER", "/etc", "'/etc' is not inside"),
        ("SKLEARN_SERVER", "ftp://host/iris", "node 'clf': modelUri 'ftp://host/iris': unknown scheme"),
    ]:
        prepackaged.write_text(sklearn_deployment("sk", implementation, uri))
        refused = verb(platform, "apply", str(prepackaged))
        assert refused.returncode == 2 and problem in refused.stderr, refused.stderr
    assert platform.call("GET", "/deployments/sk").status_code == 404


def sklearn_deployment(name: str, implementation: str, uri: str, method: str | None = None) -> str:
    chosen = f"parameters: [{{name: method, value: {method}, type: STRING}}]" if method else ""
    return textwrap.dedent(f"""
        kind: SeldonDeployment
        metadata: {{name: {name}}}
        spec:
          predictors:
          - name: default
            graph: {{name: clf, implementation: {implementation}, modelUri: {uri}, {chosen}}}
    """)


def seldon_answer(gateway: str, name: str) -> dict[str, Any]:
    body = {"data": {"ndarray": ROWS}}
    answer = httpx.post(f"{gateway}/e/{name}/api/v1.0/predictions", json=body, timeout=30)
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()["data"]
    return data


def test_seldon_sklearn_server(platform: Control, tmp_path: Path) -> None:
    """Seldon's SKLEARN_SERVER on the model.joblib of a folder beside the file, answering with
    predict_proba (its default; the ``method`` parameter: test_apply_storage)."""
    classifier = sklearn_model_folder(tmp_path / "iris")
    (tmp_path / "sk.yaml").write_text(sklearn_deployment("iris", "SKLEARN_SERVER", "./iris"))
    applied = verb(platform, "apply", str(tmp_path / "sk.yaml"))
    assert applied.returncode == 0, applied.stderr
    proba = seldon_answer(platform.gateway, "iris")
    assert proba["names"] == ["t:0", "t:1", "t:2"]
    np.testing.assert_allclose(proba["ndarray"], classifier.predict_proba(ROWS))
    assert verb(platform, "delete", "iris").returncode == 0


INFERENCE_SERVICE = """
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: scale}
spec:
  predictor:
    ${CANARY}
    model:
      modelFormat: {name: inferd}
      storageUri: ./scale
"""
MODEL = """
import inferd


class Scale(inferd.Model):
    def predict(self, inputs):
        return {"y": inputs["x"] * FACTOR}
"""


def kserve(folder: Path, factor: float, canary: str) -> Path:
    write(folder / "scale", {"inferd.yaml": "name: scale\n", "model.py": f"FACTOR = {factor}\n{MODEL}"})
    path = folder / "isvc.yaml"
    path.write_text(INFERENCE_SERVICE.replace("${CANARY}", canary))
    return path


def kserve_origins(gateway: str, count: int) -> Counter[Any]:
    body = {"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1.0]}]}
    path = "/v2/models/scale/infer"
    return origins(gateway, "scale", count, path, body, lambda a: a["outputs"][0]["data"][0])


@pytest.mark.parametrize("canary", [20])
def test_inference_service_canary(platform: Control, tmp_path: Path, canary: int) -> None:
    path = kserve(tmp_path, 1.0, "")
    assert verb(platform, "apply", str(path)).returncode == 0
    assert kserve_origins(platform.gateway, 20) == Counter({1.0: 20})

    kserve(tmp_path, 2.0, f"canaryTrafficPercent: {canary}")
    canaried = verb(platform, "apply", str(path))
    assert canaried.returncode == 0, canaried.stderr
    split = kserve_origins(platform.gateway, REQUESTS)
    assert abs(split[2.0] / REQUESTS - canary / 100) < 0.06 and split[1.0] + split[2.0] == REQUESTS, split

    kserve(tmp_path, 2.0, "")  # promoted: the new revision takes everything, the previous one stops
    promoted = verb(platform, "apply", str(path), "--json")
    assert promoted.returncode == 0, promoted.stderr
    outcome = json.loads(promoted.stdout)[0]
    assert outcome["started"] == [] and len(outcome["retired"]) == 1
    assert kserve_origins(platform.gateway, 20) == Counter({2.0: 20})
    assert len(platform.call("GET", "/deployments/scale/services").json()) == 1
    assert verb(platform, "delete", "scale").returncode == 0
