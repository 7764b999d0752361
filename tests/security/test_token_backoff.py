"""Guessing tokens: a client past ten wrong tokens is slowed, then refused 429 with ``Retry-After``
(gRPC: RESOURCE_EXHAUSTED), while a right token still answers at once, a missing one costs nothing and
other clients keep their 401. Before, 200 wrong tokens took 1.8 s."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import grpc
import httpx
import pytest

from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb
from inferd.protocols.v2._generated import grpc_predict_v2_pb2_grpc as pb_grpc
from inferd.server.backoff import Backoff, client_key
from inferd.server.grpc_interceptors import peer_address
from tests.security.conftest import APPS, PYTHONPATH
from tests.servers import RunningServer, serve

RIGHT = "right-token"
INFER = {"inputs": [{"name": "seconds", "shape": [1], "datatype": "FP32", "data": [0.0]}]}
PATH = "/v2/models/sleepy/infer"


@contextmanager
def guarded(grpc_server: str = "inferd") -> Iterator[RunningServer]:
    env = {"PYTHONPATH": PYTHONPATH, "INFERD_AUTH_TOKENS": RIGHT}
    with serve(
        str(APPS / "native_models.py"), "--dialect", "native", "--grpc-server", grpc_server, env=env
    ) as server:
        yield server


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def timed(send: httpx.Client, token: str | None) -> tuple[httpx.Response, float]:
    started = time.perf_counter()
    answer = send.post(PATH, json=INFER, headers=bearer(token) if token else {})
    return answer, time.perf_counter() - started


def test_fifty_wrong_tokens_are_slowed_then_refused_while_the_right_one_answers_at_once() -> None:
    with guarded() as server, server.http() as http:
        memory = server.peak_memory()
        started = time.perf_counter()
        for attempt in range(10):  # the free ones: refused 401 as before, at once
            answer = http.post(PATH, json=INFER, headers=bearer(f"guess-{attempt}"))
            assert answer.status_code == 401, answer.text
        assert time.perf_counter() - started < 2.0

        answers: list[httpx.Response] = []

        def guess(worker: int) -> None:
            with server.http() as mine:
                for attempt in range(5):
                    answers.append(mine.post(PATH, json=INFER, headers=bearer(f"guess-{worker}-{attempt}")))

        burst = [threading.Thread(target=guess, args=(worker,)) for worker in range(8)]
        for thread in burst:
            thread.start()
        # meanwhile the right token, from the same address, is neither slowed nor refused
        for _ in range(5):
            answer, took = timed(http, RIGHT)
            assert answer.status_code == 200 and took < 0.5, (answer.text, took)
        for thread in burst:
            thread.join(60)
        assert len(answers) == 40
        for answer in answers:
            assert answer.status_code == 429, answer.text
            assert int(answer.headers["retry-after"]) >= 1
            assert "too many wrong tokens from this client" in answer.json()["error"]

        # one more guess waits before its refusal: one guess a second at best, not 110 a second
        answer, took = timed(http, "guess-again")
        assert answer.status_code == 429 and took >= 0.9, took
        # a request without a token is no guess: its 401 at once
        answer, took = timed(http, None)
        assert answer.status_code == 401 and took < 0.5
        # another client is not held to this one's guesses
        with httpx.Client(
            base_url=server.http_url, transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=30
        ) as other:
            answer, took = timed(other, "its-own-typo")
            assert answer.status_code == 401 and took < 0.5, answer.text
            assert other.post(PATH, json=INFER, headers=bearer(RIGHT)).status_code == 200
        assert server.peak_memory() - memory < 20 * 1024 * 1024
        # the sign-in form of the try-it page counts the same guesses
        form = http.post(
            "/inferd/login", data={"token": "guess-in-the-form"}, headers={"accept": "text/html"}
        )
        assert form.status_code == 429 and int(form.headers["retry-after"]) >= 1
        assert "too many wrong tokens" in form.text


@pytest.mark.parametrize("grpc_server", ["inferd", "grpcio"])
def test_grpc_guesses_are_slowed_then_resource_exhausted(grpc_server: str) -> None:
    with guarded(grpc_server) as server, server.grpc_channel() as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        request = pb.ModelMetadataRequest(name="sleepy")  # not a health method: tokens apply
        for attempt in range(10):
            with pytest.raises(grpc.RpcError) as refused:
                stub.ModelMetadata(
                    request, metadata=[("authorization", f"Bearer guess-{attempt}")], timeout=10
                )
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        started = time.perf_counter()
        with pytest.raises(grpc.RpcError) as slowed:
            stub.ModelMetadata(request, metadata=[("authorization", "Bearer guess-11")], timeout=10)
        assert slowed.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "too many wrong tokens" in (slowed.value.details() or "")
        assert time.perf_counter() - started >= 0.9
        started = time.perf_counter()
        ready = stub.ModelMetadata(request, metadata=[("authorization", f"Bearer {RIGHT}")], timeout=10)
        assert ready.name == "sleepy" and time.perf_counter() - started < 0.5
        with pytest.raises(grpc.RpcError) as missing:  # no token: no guess
            stub.ModelMetadata(request, timeout=10)
        assert missing.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_the_clients_remembered_are_bounded_and_a_host_is_its_64() -> None:
    backoff = Backoff(max_clients=1000)
    for number in range(20_000):
        backoff.failed(f"10.{number >> 16 & 255}.{number >> 8 & 255}.{number & 255}", now=0.0)
    assert len(backoff.clients) == 1000
    assert client_key("2001:db8::1") == client_key("2001:db8::ffff:1") == "2001:db8::/64"
    assert client_key("::ffff:127.0.0.1") == "127.0.0.1" and client_key(None) == ""
    # gRPC peers: inferd's own and grpcio's spellings, one client each whatever the port
    assert peer_address("ipv4:127.0.0.1:5000") == "127.0.0.1"
    assert peer_address("ipv6:[::1]:5000") == peer_address("ipv6:%5B::1%5D:5001") == "::1"
    for _ in range(10):  # within the free ones: nothing; then a refusal that says when to retry
        assert backoff.failed("192.0.2.1", now=100.0) is None
    refused = backoff.failed("192.0.2.1", now=100.0)
    assert refused is not None and refused.retry_after == 6  # one wrong token drains in 6 s
    assert backoff.failed("192.0.2.1", now=160.0) is None  # a minute later: free again
