"""Bearer tokens on every dialect's routes and on gRPC: probes stay open, everything else needs one of
the tokens, and neither model code nor the log ever sees the Authorization header."""

from __future__ import annotations

import grpc
import pytest

from inferd.protocols.seldon._generated import prediction_pb2 as seldon_pb
from inferd.protocols.seldon._generated import prediction_pb2_grpc as seldon_grpc
from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb
from inferd.protocols.v2._generated import grpc_predict_v2_pb2_grpc as pb_grpc
from tests.security.conftest import TOKENS, Secured, bearer


def test_probes_need_no_token(secured: Secured) -> None:
    with secured.client() as http:
        for path in (secured.health, "/v2/health/live", "/v2/health/ready"):
            assert http.get(path).status_code == 200, path


def test_model_routes_need_a_known_token(secured: Secured) -> None:
    refusals = [None, "Bearer wrong-token", f"Basic {TOKENS[0]}", f"Bearer {TOKENS[0]}x", "Bearer"]
    with secured.client() as http:
        for authorization in refusals:
            headers = {"Authorization": authorization} if authorization is not None else {}
            answer = secured.ask(http, headers=headers)
            assert answer.status_code == 401, (authorization, answer.text)
            assert answer.headers["www-authenticate"] == "Bearer"
            assert "bearer token" in answer.json()["error"]
            assert http.get("/metrics", headers=headers).status_code == 401
        for token in TOKENS:
            answer = secured.ask(http, headers=bearer(token))
            assert answer.status_code == 200, answer.text
            assert http.get("/metrics", headers=bearer(token)).status_code == 200


def test_a_post_to_a_probe_path_needs_a_token(secured: Secured) -> None:
    """Only GET and HEAD of a probe are open (an ABEJA server answers every other path with the model)."""
    with secured.client() as http:
        assert http.post(secured.health, json={}).status_code == 401


@pytest.mark.parametrize("secured", ["deepaas", "abeja"], indirect=True)
def test_model_code_never_sees_the_authorization_header(secured: Secured) -> None:
    with secured.client(bearer()) as http:
        answer = secured.ask(http)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body.get("predictions", body)["authorization"] is None  # DEEPaaS wraps the answer


def test_tokens_never_reach_the_log(secured: Secured) -> None:
    with secured.client(bearer(TOKENS[1])) as http:
        assert secured.ask(http).status_code == 200
        assert secured.ask(http, headers={"Authorization": "Bearer not-a-token"}).status_code == 401
    log = secured.server.wait_for_log("401")
    assert "401" in log  # the access log (inferd's or ABEJA's lines) has the refused request
    for secret in (*TOKENS, "not-a-token"):
        assert secret not in log


@pytest.mark.parametrize("secured", ["native"], indirect=True)
def test_v2_grpc_needs_a_token_but_for_health(secured: Secured) -> None:
    assert secured.server.grpc_address is not None
    with grpc.insecure_channel(secured.server.grpc_address) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        assert stub.ServerLive(pb.ServerLiveRequest()).live
        assert stub.ServerReady(pb.ServerReadyRequest()).ready
        assert stub.ModelReady(pb.ModelReadyRequest(name="sleepy")).ready
        for metadata in ((), (("authorization", "Bearer wrong"),)):
            with pytest.raises(grpc.RpcError) as refused:
                stub.ServerMetadata(pb.ServerMetadataRequest(), metadata=metadata)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert "bearer token" in (refused.value.details() or "")
        for token in TOKENS:
            answer = stub.ServerMetadata(
                pb.ServerMetadataRequest(), metadata=(("authorization", f"Bearer {token}"),)
            )
            assert answer.name == "inferd"


@pytest.mark.parametrize("secured", ["seldon"], indirect=True)
def test_seldon_grpc_needs_a_token(secured: Secured) -> None:
    assert secured.server.grpc_address is not None
    message = seldon_pb.SeldonMessage(data=seldon_pb.DefaultData(names=["x"]))
    message.data.ndarray.extend([[0.0]])
    with grpc.insecure_channel(secured.server.grpc_address) as channel:
        stub = seldon_grpc.ModelStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.Predict(message)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        answer = stub.Predict(message, metadata=(("authorization", f"Bearer {TOKENS[0]}"),))
        assert list(answer.data.ndarray[0]) == [0.0]


@pytest.mark.parametrize("secured", ["native"], indirect=True)
def test_malformed_grpc_bytes_are_invalid_argument_with_a_token_and_unauthenticated_without(
    secured: Secured,
) -> None:
    assert secured.server.grpc_address is not None
    with grpc.insecure_channel(secured.server.grpc_address) as channel:
        call = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")  # bytes in, bytes out
        for metadata, code in (
            ([("authorization", f"Bearer {TOKENS[0]}")], grpc.StatusCode.INVALID_ARGUMENT),
            (None, grpc.StatusCode.UNAUTHENTICATED),
        ):
            with pytest.raises(grpc.RpcError) as refused:
                call(b"\xff\xff\xff\xff garbage", metadata=metadata)
            assert refused.value.code() == code


@pytest.mark.parametrize("secured", ["abeja"], indirect=True)
def test_model_code_never_sees_the_login_cookie(secured: Secured) -> None:
    """The try-it page's cookie stands for a token: it is removed like the header, other cookies stay."""
    with secured.client() as http:
        signed = http.post("/inferd/login", data={"token": TOKENS[0]})
        assert signed.status_code == 303, signed.text
        http.cookies.set("theme", "dark")
        answer = secured.ask(http)
    assert answer.status_code == 200, answer.text
    assert answer.json()["authorization"] is None
    assert answer.json()["cookie"] == "theme=dark"
