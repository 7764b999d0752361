"""Attacks on the HTTP/2 of the platform's gRPC gateway, sent to a real ``inferd platform serve`` on
its gRPC gateway port from a raw socket (tests/h2_attacks.py), with the control process's memory
measured: PING floods and streams opened and reset at once ("rapid reset") sent without reading end
in GOAWAY ENHANCE_YOUR_CALM (``INFERD_GRPC_FLOOD_LIMIT``); without that budget a client that does not
read is not read either (the relay's write buffer stays bounded); broken SETTINGS and WINDOW_UPDATE
frames get RFC 9113's error codes; and the gateway keeps serving other connections."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.h2_attacks import (
    END_HEADERS,
    END_STREAM,
    ENHANCE_YOUR_CALM,
    FLOW_CONTROL_ERROR,
    FRAME_SIZE_ERROR,
    HEADERS,
    MIB,
    PROTOCOL_ERROR,
    SETTINGS,
    WINDOW_UPDATE,
    exchange,
    frame,
    ping_flood,
    rapid_reset,
    request_block,
    rss,
)
from tests.platform.control import Control, control

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


def test_a_ping_flood_not_read_ends_in_goaway(platform: Control) -> None:
    before = rss(platform.process.pid)
    sent, answer = ping_flood(address(platform))
    assert answer.goaway() == ENHANCE_YOUR_CALM, f"{sent} PINGs sent; {answer.count(6)} answered"
    assert answer.closed
    assert rss(platform.process.pid) - before < 32 * MIB
    still_serves(platform)


def test_rapid_reset_ends_in_goaway(platform: Control) -> None:
    before = rss(platform.process.pid)
    sent, answer = rapid_reset(address(platform), LIVE)
    assert answer.goaway() == ENHANCE_YOUR_CALM, f"{sent} streams opened and reset"
    assert answer.closed
    assert rss(platform.process.pid) - before < 32 * MIB
    still_serves(platform)


def test_broken_settings_and_window_updates_get_rfc_9113_errors(platform: Control) -> None:
    for sent, code in (
        (frame(SETTINGS, 0, 0, b"\x00\x04\x00\x01\x00"), FRAME_SIZE_ERROR),
        (frame(SETTINGS, 0, 0, struct.pack(">HL", 4, 2**31)), FLOW_CONTROL_ERROR),
        (frame(SETTINGS, 0, 0, struct.pack(">HL", 2, 7)), PROTOCOL_ERROR),
        (frame(WINDOW_UPDATE, 0, 0, bytes(4)), PROTOCOL_ERROR),
        (frame(WINDOW_UPDATE, 0, 0, struct.pack(">L", 2**31 - 1)), FLOW_CONTROL_ERROR),
    ):
        answer = exchange(address(platform), sent)
        assert answer.goaway() == code, (sent, answer.frames)
        assert answer.closed
    still_serves(platform)


def test_a_client_that_does_not_read_is_not_read_either(tmp_path: Path) -> None:
    """Without the flood budget, PINGs never read cost the gateway only its write buffer's
    high-water mark: it stops reading the client until its answers drain."""
    with control(tmp_path / "data", env={"INFERD_GRPC_FLOOD_LIMIT": str(10**9)}) as lenient:
        still_serves(lenient)
        before = rss(lenient.process.pid)
        sent, _ = ping_flood(address(lenient), count=2_000_000, seconds=4.0, wait=0.2)
        assert sent < 1_000_000, f"all {sent} PINGs were read"
        assert rss(lenient.process.pid) - before < 32 * MIB
        still_serves(lenient)
