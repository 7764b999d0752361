"""Attacks on the HTTP/2 of inferd's own gRPC server (``--grpc-server inferd``, the default), sent to
a real ``inferd serve`` on its gRPC port from a raw socket (tests/h2_attacks.py): a unary call that
sends message after message and never ends is ended after its second message; PING floods and
streams opened and reset at once ("rapid reset"), sent without reading, end in GOAWAY
ENHANCE_YOUR_CALM within the flood budget (``INFERD_GRPC_FLOOD_LIMIT``) with the server's memory
bounded; broken SETTINGS and WINDOW_UPDATE frames get the error codes of RFC 9113; and every time
the server keeps serving other connections."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb
from inferd.protocols.v2._generated import grpc_predict_v2_pb2_grpc as pb_grpc
from tests.h2_attacks import (
    END_HEADERS,
    HEADERS,
    MIB,
    PROTOCOL_ERROR,
    RST_STREAM,
    WINDOW_UPDATE,
    assert_broken_frames_end_the_connection,
    assert_floods_calmed,
    assert_unread_pings_stall,
    exchange,
    frame,
    request_block,
    rss,
    stream_asking_never_reading,
    unary_flood,
)
from tests.security.conftest import APPS
from tests.servers import RunningServer, serve

INFER = "/inference.GRPCInferenceService/ModelInfer"
LIVE = "/inference.GRPCInferenceService/ServerLive"
STREAM = "/inference.GRPCInferenceService/ModelStreamInfer"
#: The receive limit of these tests' server: each attack sends far more than it under it.
MESSAGE_LIMIT = 8 * MIB


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    env = {"INFERD_GRPC_MAX_MESSAGE_SIZE": str(MESSAGE_LIMIT)}
    with serve(str(APPS / "native_models.py"), "--dialect", "native", env=env, cwd=APPS) as running:
        assert running.grpc_address is not None
        warm_up(running)
        yield running


def warm_up(server: RunningServer) -> None:
    """A call of each kind first, so the memory the server's first calls take (imports, buffers)
    is not counted against an attack."""
    still_serves(server)
    request = pb.ModelInferRequest(
        model_name="sleepy",
        inputs=[pb.ModelInferRequest.InferInputTensor(name="seconds", datatype="FP32", shape=[1])],
        raw_input_contents=[bytes(4)],
    )
    with grpc.insecure_channel(address(server)) as channel:
        pb_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request, timeout=10)


def address(server: RunningServer) -> str:
    assert server.grpc_address is not None
    return server.grpc_address.replace("localhost", "127.0.0.1")


def still_serves(server: RunningServer) -> None:
    with grpc.insecure_channel(address(server)) as channel:
        assert pb_grpc.GRPCInferenceServiceStub(channel).ServerLive(pb.ServerLiveRequest(), timeout=10).live


def test_a_unary_call_is_reset_after_its_second_message(server: RunningServer) -> None:
    """64 MiB of 16 KiB messages on one unary call that never ends: the server answers INTERNAL and
    resets the stream after the second, and credits nothing it will not read (grpcio ends such a
    call after its first message)."""
    before = rss(server.process.pid)
    outcome = unary_flood(address(server), INFER, 64 * MIB)
    assert outcome.reset is not None, f"sent {outcome.sent} bytes and the call went on"
    assert outcome.status == str(grpc.StatusCode.INTERNAL.value[0])
    assert outcome.sent < 4 * MIB  # within the windows it had at the start, not credited past them
    assert rss(server.process.pid) - before < 32 * MIB
    still_serves(server)


def test_ping_and_reset_floods_end_in_goaway(server: RunningServer) -> None:
    assert_floods_calmed(address(server), server.process.pid, LIVE)
    still_serves(server)


def test_broken_settings_and_window_updates_get_rfc_9113_errors(server: RunningServer) -> None:
    assert_broken_frames_end_the_connection(address(server))
    # Increment 0 on a stream is that stream's error: RST_STREAM, and the connection goes on.
    opened = frame(HEADERS, END_HEADERS, 1, request_block(INFER))
    answer = exchange(address(server), opened + frame(WINDOW_UPDATE, 0, 1, bytes(4)), seconds=1.0)
    assert answer.resets(1) == [PROTOCOL_ERROR], answer.frames
    assert answer.goaway() is None and not answer.closed
    # A RST_STREAM for a stream never opened is the connection's error.
    answer = exchange(address(server), frame(RST_STREAM, 0, 5, bytes(4)))
    assert answer.goaway() == PROTOCOL_ERROR
    still_serves(server)


def test_a_peer_that_does_not_read_is_not_read_either() -> None:
    """Without the flood budget (a limit no flood reaches), PINGs never read still cost the server
    only its write buffer's high-water mark: it stops reading the peer until the answers drain, so
    the flood stalls (2,000,000 such PINGs grew it by 90-100 MiB before)."""
    env = {"INFERD_GRPC_FLOOD_LIMIT": str(10**9)}
    with serve(str(APPS / "native_models.py"), "--dialect", "native", env=env, cwd=APPS) as lenient:
        warm_up(lenient)
        assert_unread_pings_stall(address(lenient), lenient.process.pid)
        still_serves(lenient)


def test_a_stream_asking_and_never_granting_window_holds_its_answers_not_the_servers_memory() -> None:
    """ModelStreamInfer asked 200 times for 1 MiB answers by a client that reads the socket but never
    grants window: the stream's next answer waits while 4 MiB of its answers wait for the client, so
    the server holds a few MiB, not 200 (it queued every answer before)."""
    request = pb.ModelInferRequest(
        model_name="big",
        inputs=[pb.ModelInferRequest.InferInputTensor(name="x", datatype="FP32", shape=[1])],
        raw_input_contents=[bytes(4)],
    ).SerializeToString()
    with serve(str(APPS / "big_answers.py"), "--dialect", "native", cwd=APPS) as big:
        still_serves(big)
        before = rss(big.process.pid)
        sent, received = stream_asking_never_reading(address(big), STREAM, request, count=200)
        assert sent == 200, f"only {sent} requests could be sent"
        assert received < MIB  # the client's window: 64 KiB
        assert rss(big.process.pid) - before < 32 * MIB
        still_serves(big)
