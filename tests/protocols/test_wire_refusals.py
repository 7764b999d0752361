"""What the property tests against reference parsers found (tests/fuzz/test_*_reference.py), sent to
a real server: each is answered as the reference library would have it, quickly, without the
server's memory growing, and the server keeps serving."""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import numpy as np
import pytest

from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb
from tests.servers import ROOT, RunningServer, serve

MODELS = ROOT / "tests" / "models" / "hostile.py"
MAX_GROWTH = 50 * 1024 * 1024
MAX_SECONDS = 3.0


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve(str(MODELS), "--dialect", "native") as running:
        yield running


@pytest.fixture(scope="module")
def channel(server: RunningServer) -> Iterator[grpc.Channel]:
    with server.grpc_channel() as opened:
        yield opened


def echo_request(raw_key: bytes) -> bytes:
    """A ModelInfer request of the echo model whose one raw input follows ``raw_key``."""
    message = pb.ModelInferRequest(model_name="echo")
    message.inputs.add(name="x", datatype="INT32", shape=[2])
    blob = np.array([1, 2], dtype="<i4").tobytes()
    return message.SerializeToString() + raw_key + bytes([len(blob)]) + blob


@pytest.mark.parametrize(
    ("key", "accepted"),
    [
        (b"\x3a", True),  # field 7, length-delimited: the usual one-byte key
        (bytes.fromhex("ba80808000"), True),  # the same key in 5 bytes: protobuf reads it
        (bytes.fromhex("ba8080808000"), False),  # in 6 bytes: protobuf refuses the message
        (bytes.fromhex("ba808080808080808000"), False),  # in 10
    ],
)
def test_an_overlong_field_key_is_refused_as_protobuf_refuses_it(
    server: RunningServer, channel: grpc.Channel, key: bytes, accepted: bool
) -> None:
    wire = echo_request(key)
    try:
        pb.ModelInferRequest.FromString(wire)
        assert accepted
    except Exception:
        assert not accepted
    call = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")  # bytes in, bytes out
    before, started = server.peak_memory(), time.monotonic()
    if accepted:
        answer = pb.ModelInferResponse.FromString(call(wire, timeout=10))
        assert np.frombuffer(answer.raw_output_contents[0], "<i4").tolist() == [1, 2]
    else:
        with pytest.raises(grpc.RpcError) as caught:
            call(wire, timeout=10)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert caught.value.details().startswith("malformed request: Error parsing message")
    assert time.monotonic() - started < MAX_SECONDS
    assert server.peak_memory() - before < MAX_GROWTH
    with server.http(timeout=10) as http:
        live = http.post(
            "/v2/models/echo/infer",
            json={"inputs": [{"name": "x", "shape": [1], "datatype": "INT32", "data": [3]}]},
        )
    assert live.status_code == 200
