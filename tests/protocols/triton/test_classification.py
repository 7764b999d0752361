"""Triton's classification extension against real servers with tritonclient: an output asked for
with ``classification: K`` (REST) or ``class_count=K`` (gRPC) answers its top K classes as
``score:index[:label]`` BYTES, row by row for a batched model, with the labels of the model's
``labels.txt``; a bad K is a 400 and the server keeps serving."""

from __future__ import annotations

from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from tests.protocols.triton.conftest import HEADERS, LABELS, NAMED_LABELS, grpc_client, http_client
from tests.servers import RunningServer

GRPC_HEADERS = {key.lower(): value for key, value in HEADERS.items()}
ROWS = np.array([[0.1, 0.7, 0.15, 0.05], [0.5, 0.1, 0.1, 0.3]], np.float32)


def _expected(top: int, labels: list[str] | None) -> list[list[str]]:
    answer = []
    for row in ROWS:
        order = sorted(range(len(row)), key=lambda index: -row[index])[:top]
        answer.append([f"{row[i]:f}:{i}" + (f":{labels[i]}" if labels else "") for i in order])
    return answer


def _http(server: RunningServer, model: str, top: int) -> Any:
    tensor = httpclient.InferInput("x", list(ROWS.shape), "FP32")
    tensor.set_data_from_numpy(ROWS)
    wanted = httpclient.InferRequestedOutput("scores", class_count=top)
    return http_client(server).infer(model, [tensor], outputs=[wanted], headers=dict(HEADERS))


def _grpc(server: RunningServer, model: str, top: int) -> Any:
    tensor = grpcclient.InferInput("x", list(ROWS.shape), "FP32")
    tensor.set_data_from_numpy(ROWS)
    wanted = grpcclient.InferRequestedOutput("scores", class_count=top)
    return grpc_client(server).infer(model, [tensor], outputs=[wanted], headers=GRPC_HEADERS)


@pytest.mark.parametrize("call", [_http, _grpc], ids=["http", "grpc"])
def test_top_k_with_labels_from_the_models_labels_file(repository_server: RunningServer, call: Any) -> None:
    for model, labels in (("scores", LABELS), ("plain", None), ("named", NAMED_LABELS)):
        for top in (1, 3, 9):  # 9: more than the 4 classes is all 4
            answer = call(repository_server, model, top).as_numpy("scores")
            assert answer.shape == (2, min(top, 4))
            got = [[item.decode() for item in row] for row in answer]
            assert got == _expected(min(top, 4), labels), (model, top)


def test_classification_in_rest_json_and_the_label_filename(repository_server: RunningServer) -> None:
    with httpx.Client(base_url=repository_server.http_url, headers=HEADERS, timeout=10) as client:
        body = {
            "inputs": [{"name": "x", "shape": [2, 4], "datatype": "FP32", "data": ROWS.tolist()}],
            "outputs": [{"name": "scores", "parameters": {"classification": 2}}],
        }
        answer = client.post("/v2/models/scores/infer", json=body)
        assert answer.status_code == 200, answer.text
        (output,) = answer.json()["outputs"]
        assert (output["datatype"], output["shape"]) == ("BYTES", [2, 2])
        assert output["data"] == [item for row in _expected(2, LABELS) for item in row]
        for bad, said in ((0, "at least 1"), (True, "at least 1"), ("two", "at least 1")):
            body["outputs"] = [{"name": "scores", "parameters": {"classification": bad}}]
            refused = client.post("/v2/models/scores/infer", json=body)
            assert refused.status_code == 400 and said in refused.json()["error"], bad
        config = client.get("/v2/models/scores/config").json()
        assert config["output"][0]["label_filename"] == "labels.txt"
        assert "label_filename" not in client.get("/v2/models/plain/config").json()["output"][0]


def test_classification_of_an_unbatched_output_and_of_no_scores(secured_iris: RunningServer) -> None:
    rows = ROWS[:1]
    tensor = grpcclient.InferInput("input-0", [1, 4], "FP32")
    tensor.set_data_from_numpy(rows)
    wanted = grpcclient.InferRequestedOutput("probabilities", class_count=2)
    answer = grpc_client(secured_iris).infer("iris", [tensor], outputs=[wanted], headers=GRPC_HEADERS)
    top = answer.as_numpy("probabilities")
    assert top.shape == (1, 2)
    scores = [float(item.decode().split(":")[0]) for item in top[0]]
    assert scores == sorted(scores, reverse=True) and all(0 <= score <= 1 for score in scores)
    assert {int(item.decode().split(":")[1]) for item in top[0]} <= {0, 1, 2}
    with pytest.raises(InferenceServerException, match="at least 1"):
        bad = grpcclient.InferRequestedOutput("probabilities")
        bad._output.parameters["classification"].int64_param = -1
        grpc_client(secured_iris).infer("iris", [tensor], outputs=[bad], headers=GRPC_HEADERS)
    plain = grpc_client(secured_iris).infer("iris", [tensor], headers=GRPC_HEADERS)
    assert plain.as_numpy("probabilities").shape == (1, 3)  # still serving
