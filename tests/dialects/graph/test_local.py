"""One graph of every node type in one server: the executor's routes (-1, -2, N), combiner, output
transformer, feedback along the recorded routing, V2, gRPC and the per-node latency metrics."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import json_format

from inferd.protocols.seldon._generated import prediction_pb2 as pb
from inferd.protocols.seldon._generated import prediction_pb2_grpc as pb_grpc
from tests.dialects.graph.conftest import COMPONENTS, predict
from tests.dialects.seldon.conftest import served_requests_total
from tests.servers import RunningServer, serve


@dataclass
class Graph:
    server: RunningServer
    log: Path

    @property
    def url(self) -> str:
        return self.server.http_url

    def feedback_log(self) -> list[dict[str, Any]]:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        self.log.write_text("")
        return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graph]:
    log = tmp_path_factory.mktemp("everything") / "feedback.jsonl"
    with serve(str(COMPONENTS / "everything.yaml"), env={"GRAPH_FEEDBACK_LOG": str(log)}) as server:
        yield Graph(server, log)


def test_the_graph_is_served_under_its_name(graph: Graph) -> None:
    assert graph.server.models == ["everything"]


def test_route_to_one_model(graph: Graph) -> None:
    """[[-1, 5]] + 1 → routed to child 0 (doubler) → [[0, 12]] → negated."""
    answer = predict(graph.url, [[-1, 5]]).json()
    assert answer["data"]["ndarray"] == [[0, -12]]
    assert answer["meta"]["routing"] == {"negate": -1, "add-one": -1, "router": 0, "doubler": -1}
    assert set(answer["meta"]["requestPath"]) == {"negate", "add-one", "doubler"}


def test_route_to_the_combiner(graph: Graph) -> None:
    """[[0, 5]] + 1 → child 1, the combiner: tripler [[3, 18]] + add-ten [[11, 16]] → negated."""
    answer = predict(graph.url, [[0, 5]]).json()
    assert answer["data"]["ndarray"] == [[-14, -34]]
    routing = answer["meta"]["routing"]
    assert routing["router"] == 1 and routing["combiner"] == -1
    assert {"tripler", "add-ten", "combiner"} <= set(answer["meta"]["requestPath"])
    assert "doubler" not in routing


def test_route_minus_one_runs_every_child(graph: Graph) -> None:
    """-1: both children run; with no combiner at the router the first child's answer is kept."""
    answer = predict(graph.url, [[-2, 5]]).json()
    assert answer["data"]["ndarray"] == [[2, -12]]
    routing = answer["meta"]["routing"]
    assert routing["router"] == -1
    assert routing["doubler"] == -1 and routing["combiner"] == -1  # the second child ran too


def test_route_minus_two_stops_at_the_router(graph: Graph) -> None:
    """-2: no child runs; the router's input goes back up, through the output transformer."""
    answer = predict(graph.url, [[-3, 5]]).json()
    assert answer["data"]["ndarray"] == [[2, -6]]
    assert answer["meta"]["routing"] == {"negate": -1, "add-one": -1, "router": -2}


def test_a_route_past_the_children_names_the_router(graph: Graph) -> None:
    response = predict(graph.url, [[5, 5]])
    assert response.status_code == 500
    status = response.json()["status"]
    assert status["status"] == 1 and status["code"] == -1
    assert status["info"].startswith("node 'router': routed to 6, but it has 2 children")


def test_feedback_follows_the_recorded_routing(graph: Graph) -> None:
    graph.feedback_log()
    for features in ([[-1, 5]], [[0, 5]]):
        response = predict(graph.url, features).json()
        request = {"data": {"ndarray": features}}
        answer = httpx.post(
            f"{graph.url}/api/v1.0/feedback", json={"request": request, "response": response, "reward": 1.5}
        )
        assert answer.status_code == 200, answer.text
    first, second = graph.feedback_log(), graph.feedback_log()
    assert second == []
    # Route 0: the router learns it chose 0; the doubler gets the reward (its own routing is -1).
    # Route 1: only the router (the combiner's models take no feedback of their own here).
    assert first == [
        {"node": "chosen", "reward": 1.5, "routing": -1},
        {"node": "router", "reward": 1.5, "routing": 0},
        {"node": "router", "reward": 1.5, "routing": 1},
    ]


def test_feedback_without_routing_reaches_every_child(graph: Graph) -> None:
    graph.feedback_log()
    answer = httpx.post(f"{graph.url}/api/v1.0/feedback", json={"request": {}, "reward": 1})
    assert answer.status_code == 200
    assert sorted(line["node"] for line in graph.feedback_log()) == ["chosen", "router"]


def test_puid_is_kept_or_made(graph: Graph) -> None:
    given = predict(graph.url, [[-1, 5]], headers={"Seldon-Puid": "abc"})
    assert given.json()["meta"]["puid"] == "abc" and given.headers["Seldon-Puid"] == "abc"
    made = predict(graph.url, [[-1, 5]]).json()["meta"]["puid"]
    assert len(made) == 32


def test_seldon_request_forms(graph: Graph) -> None:
    form = httpx.post(f"{graph.url}/api/v0.1/predictions", data={"json": '{"data":{"ndarray":[[-1,5]]}}'})
    assert form.json()["data"]["ndarray"] == [[0, -12]]
    bad = httpx.post(f"{graph.url}/api/v1.0/predictions", content=b"nope")
    assert bad.status_code == 400
    assert bad.json()["status"]["reason"] == "MICROSERVICE_BAD_DATA"


def test_v2_under_the_graph_name(graph: Graph) -> None:
    body = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP64", "data": [-1, 5]}]}
    answer = httpx.post(f"{graph.url}/v2/models/everything/infer", json=body).json()
    assert answer["outputs"][0]["data"] == [0, -12]
    failing = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP64", "data": [5, 5]}]}
    response = httpx.post(f"{graph.url}/v2/models/everything/infer", json=failing)
    assert response.status_code == 500 and "node 'router'" in response.json()["error"]


def test_seldon_grpc_predict(graph: Graph) -> None:
    assert graph.server.grpc_address is not None
    with grpc.insecure_channel(graph.server.grpc_address) as channel:
        request = json_format.ParseDict({"data": {"ndarray": [[0, 5]]}}, pb.SeldonMessage())
        answer = json_format.MessageToDict(pb_grpc.SeldonStub(channel).Predict(request))
        assert answer["data"]["ndarray"] == [[-14.0, -34.0]]
        assert answer["meta"]["routing"]["router"] == 1
        metadata = json_format.MessageToDict(pb_grpc.SeldonStub(channel).GraphMetadata(pb.SeldonMessage()))
        assert set(metadata["models"]) == {
            "negate",
            "add-one",
            "router",
            "doubler",
            "combiner",
            "tripler",
            "add-ten",
        }


def test_per_node_latency_on_metrics_with_seldons_method_labels(graph: Graph) -> None:
    predict(graph.url, [[0, 5]])
    assert httpx.post(f"{graph.url}/api/v1.0/feedback", json={"request": {}, "reward": 1}).status_code == 200
    text = httpx.get(f"{graph.url}/metrics").text
    assert 'method="transform_input"' not in text and 'method="route"' not in text
    for node, method in [
        ("router", "feedback"),
        ("add-ten", "predict"),
        ("combiner", "aggregate"),
        ("router", "router"),
        ("add-one", "inputtransform"),
        ("negate", "outputtransform"),
    ]:
        line = next(
            line
            for line in text.splitlines()
            if line.startswith("inferd_graph_node_duration_seconds_count")
            and f'node="{node}"' in line
            and f'method="{method}"' in line
        )
        assert float(line.rsplit(" ", 1)[1]) >= 1


def test_graph_metadata_lists_every_node(graph: Graph) -> None:
    document = httpx.get(f"{graph.url}/api/v1.0/metadata").json()
    assert document["name"] == "everything"
    assert document["models"]["add-ten"]["inputs"] == [{"name": "x", "datatype": "FP64", "shape": [-1, -1]}]
    assert httpx.get(f"{graph.url}/health/ping").text == "pong"


def requests_total(graph: Graph, protocol: str, outcome: str) -> float:
    return served_requests_total(graph.url, "everything", protocol, outcome)


def test_predictions_and_feedback_are_counted(graph: Graph) -> None:
    """Over REST and gRPC, a failed call as an error; feedback is a call of the graph too."""
    counts = [(protocol, outcome) for protocol in ("seldon", "seldon-grpc") for outcome in ("ok", "error")]
    before = {count: requests_total(graph, *count) for count in counts}
    assert predict(graph.url, [[-1, 5]]).status_code == 200
    assert predict(graph.url, [[5, 5]]).status_code == 500
    assert httpx.post(f"{graph.url}/send-feedback", json={"request": {}, "reward": 1}).status_code == 200
    assert graph.server.grpc_address is not None
    with grpc.insecure_channel(graph.server.grpc_address) as channel:
        seldon = pb_grpc.SeldonStub(channel)
        seldon.Predict(json_format.ParseDict({"data": {"ndarray": [[0, 5]]}}, pb.SeldonMessage()))
        seldon.SendFeedback(pb.Feedback(reward=1))
        with pytest.raises(grpc.RpcError):
            seldon.Predict(json_format.ParseDict({"data": {"ndarray": [[5, 5]]}}, pb.SeldonMessage()))
    graph.feedback_log()
    expected = {
        ("seldon", "ok"): 2,
        ("seldon", "error"): 1,
        ("seldon-grpc", "ok"): 2,
        ("seldon-grpc", "error"): 1,
    }
    assert {count: requests_total(graph, *count) - before[count] for count in counts} == expected
