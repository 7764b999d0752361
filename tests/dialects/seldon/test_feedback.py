"""Feedback as seldon-core 1.18 takes it: legacy methods in its order on both protocols, empty
answers for None, and the reward counters labelled with the ``feedback`` method; and the legacy
order of the other methods."""

from __future__ import annotations

from typing import Any

import grpc
import httpx
from google.protobuf import json_format

from inferd.protocols.seldon._generated import prediction_pb2 as pb
from inferd.protocols.seldon._generated import prediction_pb2_grpc as pb_grpc
from tests.dialects.seldon.conftest import COMPONENTS
from tests.dialects.seldon.test_metrics import total
from tests.servers import RunningServer, serve

REWARDED = {"request": {"data": {"ndarray": [[1]]}}, "reward": 2.0}
UNREWARDED = {"request": {"strData": "x"}}


def both_protocols(server: RunningServer, feedback: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The REST and the gRPC answer to ``feedback``."""
    rest = httpx.post(f"{server.http_url}/send-feedback", json=feedback)
    assert rest.status_code == 200, rest.text
    assert server.grpc_address is not None
    with grpc.insecure_channel(server.grpc_address) as channel:
        reply = pb_grpc.ModelStub(channel).SendFeedback(json_format.ParseDict(feedback, pb.Feedback()))
    return rest.json(), json_format.MessageToDict(reply)


def test_legacy_grpc_feedback_answers_both_protocols(legacy_server: RunningServer) -> None:
    """Without send_feedback_rest, send_feedback_grpc gets the Feedback message on REST too."""
    assert both_protocols(legacy_server, REWARDED) == ({"strData": "grpc:2.0"}, {"strData": "grpc:2.0"})


def test_feedback_method_returning_none_answers_an_empty_message(
    legacy_server: RunningServer, raw_server: RunningServer
) -> None:
    assert both_protocols(legacy_server, UNREWARDED) == ({}, {})
    assert both_protocols(raw_server, UNREWARDED) == ({}, {})


def test_send_feedback_rest_comes_first_on_grpc_too() -> None:
    with serve("Legacy:LegacyFeedback", "--dialect", "seldon", cwd=COMPONENTS) as server:
        expected = {"jsonData": {"rest": {"request": {"data": {"ndarray": [[1.0]]}}, "reward": 2.0}}}
        assert both_protocols(server, REWARDED) == (expected, expected)


def test_reward_counters_carry_the_feedback_method(legacy_server: RunningServer) -> None:
    """Counted whichever method answers (here a legacy one), labelled ``method="feedback"``."""
    metrics_url = f"{legacy_server.http_url}/metrics"
    before = httpx.get(metrics_url).text
    httpx.post(f"{legacy_server.http_url}/send-feedback", json=REWARDED)
    after = httpx.get(metrics_url).text
    for name, added in (
        ("seldon_api_model_feedback_total", 1),
        ("seldon_api_model_feedback_reward_total", 2),
    ):
        assert total(after, name, method="feedback") == total(before, name, method="feedback") + added


def test_legacy_rest_transform_answers_grpc_too(legacy_server: RunningServer) -> None:
    assert legacy_server.grpc_address is not None
    with grpc.insecure_channel(legacy_server.grpc_address) as channel:
        reply = pb_grpc.TransformerStub(channel).TransformInput(pb.SeldonMessage(strData="x"))
    assert json_format.MessageToDict(reply) == {"strData": "rest got SeldonMessage"}


def test_a_negative_reward_is_summed(everything_server: RunningServer) -> None:
    """A penalty is feedback too: seldon-core summed it, so the reward total goes down (a 500 before)."""
    metrics_url = f"{everything_server.http_url}/metrics"
    name = "seldon_api_model_feedback_reward_total"
    before = total(httpx.get(metrics_url).text, name, method="feedback")
    answer = httpx.post(f"{everything_server.http_url}/send-feedback", json={"reward": -3})
    assert answer.status_code == 200, answer.text
    after = httpx.get(metrics_url).text
    assert total(after, name, method="feedback") == before - 3
