"""Triton's streaming extension (gRPC ``ModelStreamInfer``) with tritonclient's streaming API against
a real ``inferd serve`` of the iris example behind a bearer token, on both gRPC servers: requests
answered in order with their ids, a bad request answered as an error on the stream that then goes
on answering, the token required, and the inference in flight cancelled when the client
cancels the stream."""

from __future__ import annotations

import contextlib
import queue
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from tests.protocols.triton.conftest import HEADERS, grpc_client
from tests.servers import RunningServer, serve

GRPC_HEADERS = {key.lower(): value for key, value in HEADERS.items()}
SETOSA = [5.1, 3.5, 1.4, 0.2]
VIRGINICA = [6.7, 3.0, 5.2, 2.3]


def _inputs(rows: list[list[float]]) -> list[Any]:
    tensor = grpcclient.InferInput("input-0", [len(rows), 4], "FP32")
    tensor.set_data_from_numpy(np.array(rows, np.float32))
    return [tensor]


def _collect(answers: queue.Queue[tuple[Any, Any]], count: int) -> list[tuple[Any, Any]]:
    deadline = time.monotonic() + 10
    got = []
    while len(got) < count:
        got.append(answers.get(timeout=max(0.1, deadline - time.monotonic())))
    return got


def test_stream_answers_in_order_with_ids_and_goes_on_after_an_error(secured_iris: RunningServer) -> None:
    client = grpc_client(secured_iris)
    answers: queue.Queue[tuple[Any, Any]] = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)), headers=GRPC_HEADERS)
    try:
        for index in range(20):
            client.async_stream_infer(
                "iris", _inputs([SETOSA if index % 2 else VIRGINICA]), request_id=f"r{index}"
            )
        bad = grpcclient.InferInput("input-0", [1, 3], "FP32")  # wrong shape: refused by the model
        bad.set_data_from_numpy(np.ones((1, 3), np.float32))
        client.async_stream_infer("iris", [bad], request_id="bad")
        client.async_stream_infer("nowhere", _inputs([SETOSA]), request_id="lost")
        client.async_stream_infer("iris", _inputs([SETOSA, VIRGINICA]), request_id="after")
        got = _collect(answers, 23)
    finally:
        client.stop_stream()
        client.close()

    for index, (result, error) in enumerate(got[:20]):
        assert error is None, error
        assert result.get_response().id == f"r{index}"
        assert result.as_numpy("label").tolist() == [0 if index % 2 else 2]
    (bad_result, bad_error), (lost_result, lost_error), (after, after_error) = got[20:]
    assert bad_result is None and lost_result is None
    assert "shape" in bad_error.message(), bad_error.message()
    assert "nowhere" in lost_error.message(), lost_error.message()
    assert after_error is None and after.get_response().id == "after"
    assert after.as_numpy("label").tolist() == [0, 2]
    assert secured_iris.process.poll() is None  # still serving


def test_stream_needs_the_token(secured_iris: RunningServer) -> None:
    client = grpc_client(secured_iris)
    answers: queue.Queue[tuple[Any, Any]] = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        # the refusal may end the stream before the request is queued: then queuing raises too
        with contextlib.suppress(InferenceServerException):
            client.async_stream_infer("iris", _inputs([SETOSA]), request_id="no-token")
        ((result, error),) = _collect(answers, 1)
    finally:
        client.stop_stream()
        client.close()
    assert result is None
    assert "unauthenticated" in str(error).lower(), error


SLOW_MODEL = """
import asyncio

import numpy as np

import inferd


class Slow(inferd.Model):
    async def predict(self, inputs):
        await asyncio.sleep(float(inputs["seconds"].ravel()[0]))
        return {"done": np.array([True])}
"""


def _seconds(value: float) -> list[Any]:
    tensor = grpcclient.InferInput("seconds", [1], "FP64")
    tensor.set_data_from_numpy(np.array([value], np.float64))
    return [tensor]


@pytest.mark.parametrize("kind", ["inferd", "grpcio"])
def test_closing_the_stream_cancels_the_inference_in_flight(kind: str, tmp_path: Path) -> None:
    """One call of the model at a time: a 6 s inference left running after its stream is cancelled
    would keep the next call waiting for its turn."""
    (tmp_path / "slow.py").write_text(SLOW_MODEL)
    env = {"INFERD_MODELS__SLOW__MAX_CONCURRENCY": "1"}
    with serve(str(tmp_path / "slow.py"), "--dialect", "native", "--grpc-server", kind, env=env) as server:
        client = grpc_client(server)
        answers: queue.Queue[tuple[Any, Any]] = queue.Queue()
        client.start_stream(callback=lambda result, error: answers.put((result, error)))
        client.async_stream_infer("slow", _seconds(6), request_id="long")
        time.sleep(0.5)  # the inference has started
        client.stop_stream(cancel_requests=True)
        started = time.monotonic()
        answer = client.infer("slow", _seconds(0))
        waited = time.monotonic() - started
        client.close()
        assert answer.as_numpy("done").tolist() == [True]
        assert waited < 3, waited
        assert server.process.poll() is None
