"""Attacks on the HTTP/2 of the platform's gRPC gateway, sent to a real ``inferd platform serve`` on
its gRPC gateway port from a raw socket (tests/h2_attacks.py), with the control process's memory
measured: PING floods and streams opened and reset at once ("rapid reset") sent without reading end
in GOAWAY ENHANCE_YOUR_CALM (``INFERD_GRPC_FLOOD_LIMIT``); without that budget a client that does not
read is not read either (the relay's write buffer stays bounded); broken SETTINGS and WINDOW_UPDATE
frames get RFC 9113's error codes; a client that asks for large answers and never reads them holds
the relay (a gateway of its own before a real ``inferd serve``) to its windows, not to its memory;
and the gateway keeps serving other connections."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import h2.config
import h2.connection
import h2.settings
import pytest

from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb
from inferd.protocols.v2._generated import grpc_predict_v2_pb2_grpc as pb_grpc
from tests.h2_attacks import (
    END_HEADERS,
    END_STREAM,
    HEADERS,
    MIB,
    assert_broken_frames_end_the_connection,
    assert_floods_calmed,
    assert_unread_pings_stall,
    exchange,
    frame,
    request_block,
    rss,
)
from tests.platform.control import Control, control
from tests.servers import RunningServer, serve, with_this_tree

LIVE = "/inference.GRPCInferenceService/ServerLive"


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Control]:
    with control(tmp_path_factory.mktemp("h2") / "data") as running:
        still_serves(running)  # its first call's memory is not counted against an attack
        yield running


def address(running: Control) -> str:
    return running.grpc.replace("localhost", "127.0.0.1")


def still_serves(running: Control) -> None:
    """A call on a new connection is answered (with the gateway's own status: no endpoint)."""
    answer = exchange(address(running), frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block(LIVE)), 1.0)
    assert answer.count(HEADERS) == 1 and answer.goaway() is None, answer.frames


def test_ping_and_reset_floods_end_in_goaway(platform: Control) -> None:
    assert_floods_calmed(address(platform), platform.process.pid, LIVE)
    still_serves(platform)


def test_broken_settings_and_window_updates_get_rfc_9113_errors(platform: Control) -> None:
    assert_broken_frames_end_the_connection(address(platform))
    still_serves(platform)


def test_a_client_that_does_not_read_is_not_read_either(tmp_path: Path) -> None:
    """Without the flood budget, PINGs never read cost the gateway only its write buffer's
    high-water mark: it stops reading the client until its answers drain."""
    with control(tmp_path / "data", env={"INFERD_GRPC_FLOOD_LIMIT": str(10**9)}) as lenient:
        still_serves(lenient)
        assert_unread_pings_stall(address(lenient), lenient.process.pid)
        still_serves(lenient)


BIG_MODEL = """
import numpy as np

import inferd


class Big(inferd.Model):
    inputs = (inferd.TensorSpec("x", "FP32", (-1,)),)
    outputs = (inferd.TensorSpec("y", "FP32", (-1,)),)

    def predict(self, inputs):
        return {"y": np.zeros(1 << 20, np.float32)}  # 4 MiB whatever it is asked
"""
#: The gateway alone in a process of its own (so its memory is its own), routing endpoint ``main``
#: to the gRPC port of the ``inferd serve`` named in argv.
GATEWAY = """
import asyncio
import sys

from inferd.platform.gateway import EndpointTable
from inferd.platform.gateway.grpc_proxy import serve_grpc_gateway


async def main() -> None:
    http, grpc = sys.argv[1], sys.argv[2]
    table = EndpointTable()
    table.set("main", [(http, 100)], None, {http: grpc})
    server = await serve_grpc_gateway(table, "127.0.0.1", 0)
    print(server.port, flush=True)
    await asyncio.Event().wait()


asyncio.run(main())
"""


@contextmanager
def gateway_process(upstream: RunningServer) -> Iterator[tuple[subprocess.Popen[str], str]]:
    assert upstream.grpc_address is not None
    command = [sys.executable, "-c", GATEWAY, upstream.http_address, upstream.grpc_address]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, env=with_this_tree(dict(os.environ))
    )
    try:
        assert process.stdout is not None
        port = process.stdout.readline().strip()
        assert port, "the gateway did not start"
        yield process, f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def infer_request() -> bytes:
    request = pb.ModelInferRequest(
        model_name="big",
        inputs=[pb.ModelInferRequest.InferInputTensor(name="x", datatype="FP32", shape=[1])],
        raw_input_contents=[bytes(4)],
    )
    return request.SerializeToString()


def test_a_client_that_does_not_read_answers_holds_the_relay_to_its_windows(tmp_path: Path) -> None:
    """A client opens its windows wide (2^31-1), asks 32 calls of 4 MiB answers, and never reads:
    the relay writes to it up to its write buffer's high-water mark and stops crediting the
    service, so the answers wait in the service's windows, not in the gateway (which relayed all
    128 MiB into its write buffer before)."""
    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "model.py").write_text(BIG_MODEL)
    with serve(str(folder)) as upstream, gateway_process(upstream) as (gateway, address_):
        with grpc.insecure_channel(address_) as channel:  # one call through, read: the baseline
            live = pb_grpc.GRPCInferenceServiceStub(channel).ServerLive
            assert live(pb.ServerLiveRequest(), metadata=(("inferd-endpoint", "main"),), timeout=10).live
        before = rss(gateway.pid)
        host, _, port = address_.rpartition(":")
        client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            client.initiate_connection()
            client.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 2**31 - 1})
            client.increment_flow_control_window(2**31 - 1 - 65535)
            body = infer_request()
            message = b"\0" + len(body).to_bytes(4, "big") + body
            for stream in range(1, 64, 2):
                client.send_headers(
                    stream,
                    [
                        (":method", "POST"),
                        (":scheme", "http"),
                        (":path", "/inference.GRPCInferenceService/ModelInfer"),
                        (":authority", "127.0.0.1"),
                        ("content-type", "application/grpc"),
                        ("te", "trailers"),
                        ("inferd-endpoint", "main"),
                    ],
                )
                client.send_data(stream, message, end_stream=True)
            sock.sendall(client.data_to_send())
            grown = 0
            for _ in range(40):  # the answers are 128 MiB: give the relay 4 s to take them in
                time.sleep(0.1)
                grown = max(grown, rss(gateway.pid) - before)
            assert grown < 32 * MIB, f"the gateway grew {grown // MIB} MiB for a client that reads nothing"
        with grpc.insecure_channel(address_) as channel:  # and it serves on
            live = pb_grpc.GRPCInferenceServiceStub(channel).ServerLive
            assert live(pb.ServerLiveRequest(), metadata=(("inferd-endpoint", "main"),), timeout=10).live
