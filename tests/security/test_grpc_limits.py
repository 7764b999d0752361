"""What a large gRPC message costs a server with a token set: a message over the limit (by default the
HTTP body limit) is RESOURCE_EXHAUSTED from its length, and one without a token is UNAUTHENTICATED
from its metadata; neither is read, so the server's peak memory stays far below the message."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from inferd.config.settings import Settings
from inferd.core.settings import GRPC_LARGEST_MESSAGE
from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb
from inferd.protocols.v2._generated import grpc_predict_v2_pb2_grpc as pb_grpc
from tests.security.conftest import APPS, TOKENS
from tests.servers import RunningServer, serve

MIB = 2**20
BODY_LIMIT = 64 * MIB  # INFERD_MAX_BODY_SIZE's default, left unset here
#: What refusing a large message may cost the server at its worst (its buffers, not the message).
SMALL = 24 * MIB
TOKEN = (("authorization", f"Bearer {TOKENS[0]}"),)


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    target = str(APPS / "native_models.py")
    with serve(target, "--dialect", "native", env={"INFERD_AUTH_TOKENS": TOKENS[0]}, cwd=APPS) as running:
        yield running


def _infer(server: RunningServer, size: int, metadata: tuple[tuple[str, str], ...] = ()) -> grpc.RpcError:
    """Send a ModelInfer of ``size`` bytes of raw tensor data; the error it is answered."""
    request = pb.ModelInferRequest(
        model_name="sleepy",
        inputs=[pb.ModelInferRequest.InferInputTensor(name="seconds", datatype="FP32", shape=[1])],
        raw_input_contents=[bytes(size)],
    )
    assert server.grpc_address is not None
    with grpc.insecure_channel(server.grpc_address) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.ModelInfer(request, metadata=metadata, timeout=30)
        assert stub.ServerLive(pb.ServerLiveRequest()).live  # and the server keeps serving
    return refused.value


def test_a_message_over_the_body_limit_is_refused_unread(server: RunningServer) -> None:
    before = server.peak_memory()
    refused = _infer(server, BODY_LIMIT + 16 * MIB, TOKEN)
    assert refused.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, refused.details()
    assert str(BODY_LIMIT) in (refused.details() or "")
    assert server.peak_memory() - before < SMALL


def test_a_large_message_without_a_token_is_refused_unread(server: RunningServer) -> None:
    size = BODY_LIMIT - 4 * MIB  # allowed, as the last call shows
    before = server.peak_memory()
    for metadata in ((), (("authorization", "Bearer wrong"),)):
        refused = _infer(server, size, metadata)
        assert refused.code() == grpc.StatusCode.UNAUTHENTICATED, refused.details()
    assert server.peak_memory() - before < SMALL
    # With the token the same message is read, and reaches the shape check (1 FP32 is 4 bytes): one
    # copy of it is held (the native server's only one; a few pages of it may reuse freed memory).
    read = _infer(server, size, TOKEN)
    assert read.code() == grpc.StatusCode.INVALID_ARGUMENT, read.details()
    assert server.peak_memory() - before > size * 9 // 10


def test_the_grpc_limit_is_the_body_limit_unless_set() -> None:
    assert Settings(max_body_size=1000).grpc_limits == (1000, GRPC_LARGEST_MESSAGE)
    assert Settings(max_body_size=1000, grpc_max_message_size=5000).grpc_limits == (5000, 5000)
