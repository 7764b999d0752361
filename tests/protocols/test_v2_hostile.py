"""Hostile V2 requests against a real server: shapes that declare far more than the data received,
compressed bodies that inflate far past the body limit, and protobuf that is not protobuf. Each is
refused with a clear 4xx (gRPC INVALID_ARGUMENT), quickly, without the server's peak memory growing,
and the server keeps serving. Also: an unexpected 500 is logged once."""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import httpx
import orjson
import pytest

from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb
from inferd.protocols.v2._generated import grpc_predict_v2_pb2_grpc as pb_grpc
from tests.servers import ROOT, RunningServer, serve

MODELS = ROOT / "tests" / "models" / "hostile.py"
#: How much the server's peak memory may grow while refusing one attack (an attack that gets through
#: costs gigabytes), and how long the refusal may take.
MAX_GROWTH = 200 * 1024 * 1024
MAX_SECONDS = 3.0
HUGE = 2**31
ECHO = {"inputs": [{"name": "x", "shape": [2], "datatype": "INT32", "data": [1, 2]}]}


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve(str(MODELS), "--dialect", "native", "--access-log") as running:
        yield running


@pytest.fixture(scope="module")
def http(server: RunningServer) -> Iterator[httpx.Client]:
    with server.http(timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def channel(server: RunningServer) -> Iterator[grpc.Channel]:
    with server.grpc_channel() as opened:
        yield opened


def refused_cheaply(server: RunningServer, http: httpx.Client, attack: Callable[[], Any]) -> Any:
    """``attack()``'s result, checking it took little time and memory and the server still answers."""
    before = server.peak_memory()
    started = time.monotonic()
    result = attack()
    took = time.monotonic() - started
    grown = server.peak_memory() - before
    assert took < MAX_SECONDS, f"the refusal took {took:.1f} s"
    assert grown < MAX_GROWTH, f"the server's peak memory grew by {grown / 2**20:.0f} MiB"
    answer = http.post("/v2/models/echo/infer", json=ECHO)
    assert answer.status_code == 200 and answer.json()["outputs"][0]["data"] == [1, 2]
    return result


# ---- shapes declaring more than the data received ----


def binary_body(shape: list[int], datatype: str, blob: bytes) -> tuple[bytes, dict[str, str]]:
    tensor = {
        "name": "x",
        "shape": shape,
        "datatype": datatype,
        "parameters": {"binary_data_size": len(blob)},
    }
    head = orjson.dumps({"inputs": [tensor]})
    return head + blob, {"Inference-Header-Content-Length": str(len(head))}


ONE_BYTES_ELEMENT = struct.pack("<I", 1) + b"a"

REST_ATTACKS = {
    # 121 bytes that made the server allocate an object array of 2**31 elements (16 GB)
    "binary BYTES, 2**31 elements in 5 bytes": (
        binary_body([HUGE], "BYTES", ONE_BYTES_ELEMENT),
        "shape [2147483648] needs 2147483648 elements, and 5 bytes of data hold at most 1",
    ),
    "binary BYTES, 2**80 elements": (
        binary_body([2**40, 2**40], "BYTES", ONE_BYTES_ELEMENT),
        "has shape [1099511627776, 1099511627776], larger than any tensor can be",
    ),
    "binary FP32, 2**31 elements in 4 bytes": (
        binary_body([HUGE], "FP32", b"\0" * 4),
        "has 4 bytes of data but shape [2147483648] of FP32 needs 8589934592",
    ),
    "binary INT64, zero elements numpy cannot shape": (
        binary_body([2**62, 0], "INT64", b""),
        "has shape [4611686018427387904, 0], larger than any tensor can be",
    ),
    "JSON FP32, zero elements numpy cannot shape": (
        (
            orjson.dumps(
                {"inputs": [{"name": "x", "shape": [HUGE, HUGE, 0], "datatype": "FP32", "data": []}]}
            ),
            {},
        ),
        "has shape [2147483648, 2147483648, 0], larger than any tensor can be",
    ),
    "JSON BYTES, 2**31 elements in one": (
        (orjson.dumps({"inputs": [{"name": "x", "shape": [HUGE], "datatype": "BYTES", "data": ["a"]}]}), {}),
        "has 1 elements but shape [2147483648] needs 2147483648",
    ),
    "JSON BYTES nested a thousand levels (past Python's recursion limit)": (
        (
            b'{"inputs":[{"name":"x","shape":[1],"datatype":"BYTES","data":'
            + b"[" * 1000
            + b'"a"'
            + b"]" * 1000
            + b"}]}",
            {},
        ),
        "input 'x': data nests deeper than 64 levels",
    ),
}


@pytest.mark.parametrize("case", list(REST_ATTACKS))
def test_rest_shapes_are_checked_against_the_data_received(
    server: RunningServer, http: httpx.Client, case: str
) -> None:
    (body, headers), message = REST_ATTACKS[case]
    answer = refused_cheaply(
        server, http, lambda: http.post("/v2/models/echo/infer", content=body, headers=headers)
    )
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert message in answer.json()["error"]


def raw_request(shape: list[int], datatype: str, blob: bytes) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="echo")
    request.inputs.add(name="x", datatype=datatype, shape=shape)
    request.raw_input_contents.append(blob)
    return request


def typed_request(shape: list[int], field: str, datatype: str, values: list[Any]) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="echo")
    tensor = request.inputs.add(name="x", datatype=datatype, shape=shape)
    getattr(tensor.contents, field).extend(values)
    return request


GRPC_ATTACKS = {
    "raw BYTES, 2**31 elements in 5 bytes": (
        raw_request([HUGE], "BYTES", ONE_BYTES_ELEMENT),
        "5 bytes of data hold at most 1",
    ),
    "raw FP32, 2**80 elements": (
        raw_request([2**40, 2**40], "FP32", b"\0" * 4),
        "larger than any tensor can be",
    ),
    "raw INT64, zero elements numpy cannot shape": (
        raw_request([2**62, 0], "INT64", b""),
        "larger than any tensor can be",
    ),
    "raw FP32, negative dimension": (
        raw_request([-4], "FP32", b"\0" * 16),
        "dimensions must not be negative",
    ),
    "typed BYTES, 2**31 elements in one": (
        typed_request([HUGE], "bytes_contents", "BYTES", [b"a"]),
        "has 1 elements but shape [2147483648] needs 2147483648",
    ),
    "typed INT32, zero elements numpy cannot shape": (
        typed_request([2**62, 0], "int_contents", "INT32", []),
        "larger than any tensor can be",
    ),
}


@pytest.mark.parametrize("case", list(GRPC_ATTACKS))
def test_grpc_shapes_are_checked_against_the_data_received(
    server: RunningServer, http: httpx.Client, channel: grpc.Channel, case: str
) -> None:
    request, message = GRPC_ATTACKS[case]
    stub = pb_grpc.GRPCInferenceServiceStub(channel)

    def attack() -> grpc.RpcError:
        with pytest.raises(grpc.RpcError) as caught:
            stub.ModelInfer(request)
        return caught.value

    error = refused_cheaply(server, http, attack)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    assert message in error.details()


# ---- compressed bodies ----


def bomb(size: int, wbits: int) -> bytes:
    """``size`` zero bytes compressed (gzip for wbits 31, zlib's deflate for 15) in about size/1000
    bytes, built without compressing them all: after a full flush zlib forgets what came before, so
    every further MiB of zeros compresses to the same bytes. The trailer checksums the whole size."""
    block = bytes(2**20)
    squeeze = zlib.compressobj(9, zlib.DEFLATED, wbits)
    first = squeeze.compress(block) + squeeze.flush(zlib.Z_FULL_FLUSH)
    middle = squeeze.compress(block) + squeeze.flush(zlib.Z_FULL_FLUSH)
    final = zlib.compressobj(9, zlib.DEFLATED, -15).flush()  # an empty last block
    if wbits == 31:
        crc = 0
        for _ in range(size // len(block)):
            crc = zlib.crc32(block, crc)
        trailer = struct.pack("<II", crc, size % 2**32)
    else:
        adler = 1
        for _ in range(size // len(block)):
            adler = zlib.adler32(block, adler)
        trailer = struct.pack(">I", adler)
    return first + middle * (size // len(block) - 1) + final + trailer


def test_the_bomb_helper_builds_valid_streams() -> None:
    for wbits in (31, 15):
        assert zlib.decompress(bomb(3 * 2**20, wbits), wbits) == bytes(3 * 2**20)


@pytest.mark.parametrize(("encoding", "wbits"), [("gzip", 31), ("deflate", 15)])
def test_a_compressed_body_is_held_to_the_body_limit_once_inflated(
    server: RunningServer, http: httpx.Client, encoding: str, wbits: int
) -> None:
    body = bomb(2**30, wbits)  # 1 GiB of zeros
    assert len(body) < 2 * 2**20
    answer = refused_cheaply(
        server,
        http,
        lambda: http.post("/v2/models/echo/infer", content=body, headers={"Content-Encoding": encoding}),
    )
    assert answer.status_code == 413, answer.text
    assert answer.json() == {"error": "request body inflates to more than the limit of 67108864 bytes"}


@pytest.mark.parametrize(("encoding", "wbits"), [("gzip", 31), ("deflate", 15)])
def test_a_valid_compressed_body_still_works(http: httpx.Client, encoding: str, wbits: int) -> None:
    squeeze = zlib.compressobj(6, zlib.DEFLATED, wbits)
    body = squeeze.compress(orjson.dumps(ECHO)) + squeeze.flush()
    answer = http.post("/v2/models/echo/infer", content=body, headers={"Content-Encoding": encoding})
    assert answer.status_code == 200, answer.text
    assert answer.json()["outputs"][0]["data"] == [1, 2]


def test_a_truncated_compressed_body_is_400(http: httpx.Client) -> None:
    body = zlib.compress(orjson.dumps(ECHO))[:-6]
    answer = http.post("/v2/models/echo/infer", content=body, headers={"Content-Encoding": "deflate"})
    assert answer.status_code == 400
    assert answer.json() == {"error": "body is not valid deflate data: it ends before its stream does"}


# ---- gRPC bytes that are not protobuf ----


@pytest.mark.parametrize("method", ["ModelInfer", "ModelMetadata", "ServerLive"])
def test_malformed_protobuf_is_invalid_argument(
    server: RunningServer, http: httpx.Client, channel: grpc.Channel, method: str
) -> None:
    call = channel.unary_unary(f"/inference.GRPCInferenceService/{method}")  # bytes in, bytes out
    with pytest.raises(grpc.RpcError) as caught:
        call(b"\xff\xff\xff\xff garbage")
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details().startswith("malformed request: Error parsing message")
    stub = pb_grpc.GRPCInferenceServiceStub(channel)
    assert stub.ServerLive(pb.ServerLiveRequest()).live
    assert "Unexpected" not in server.log


# ---- an unexpected 500 is logged once ----


def test_an_unexpected_500_is_logged_once_with_its_request_id(
    server: RunningServer, http: httpx.Client
) -> None:
    request = {"inputs": [{"name": "x", "shape": [1], "datatype": "INT32", "data": [1]}]}
    for model in ("unencodable", "failing"):
        rid = f"once-{model}"
        start = len(server.stderr_lines)
        answer = http.post(f"/v2/models/{model}/infer", json=request, headers={"X-Request-ID": rid})
        assert answer.status_code == 500
        assert "secret" not in answer.text and "Unserializable" not in answer.text
        assert answer.headers["x-request-id"] == rid
        # uvicorn would log a second traceback as the request ends: before the next request's access line
        http.get("/v2/health/live", headers={"X-Request-ID": f"after-{rid}"})
        server.wait_for_log(f'"request_id":"after-{rid}"')
        tracebacks = [line for line in server.stderr_lines[start:] if "Traceback" in line]
        assert len(tracebacks) == 1, tracebacks
        assert f'"request_id":"{rid}"' in tracebacks[0]
