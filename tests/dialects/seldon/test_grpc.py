"""Seldon's seven gRPC services over a real channel: proto-normalised answers and real status codes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2, json_format

from inferd.protocols.seldon._generated import prediction_pb2 as pb
from inferd.protocols.seldon._generated import prediction_pb2_grpc as pb_grpc
from tests.servers import RunningServer


def message(document: dict[str, Any], kind: Any = pb.SeldonMessage) -> Any:
    return json_format.ParseDict(document, kind())


def as_dict(reply: Any) -> dict[str, Any]:
    return json_format.MessageToDict(reply)


@pytest.fixture(scope="module")
def identity_channel(identity_server: RunningServer) -> Iterator[grpc.Channel]:
    assert identity_server.grpc_address is not None
    with grpc.insecure_channel(identity_server.grpc_address) as channel:
        yield channel


@pytest.fixture(scope="module")
def everything_channel(everything_server: RunningServer) -> Iterator[grpc.Channel]:
    assert everything_server.grpc_address is not None
    with grpc.insecure_channel(everything_server.grpc_address) as channel:
        yield channel


def test_model_predict_as_the_spec_shows(identity_channel: grpc.Channel) -> None:
    request = message({"data": {"ndarray": [[1, 2]]}, "meta": {"puid": "abc", "tags": {"t": 1}}})
    for stub in (pb_grpc.ModelStub(identity_channel), pb_grpc.SeldonStub(identity_channel)):
        assert as_dict(stub.Predict(request)) == {
            "meta": {"puid": "abc", "tags": {"t": 1.0}},
            "data": {"names": ["t:0", "t:1"], "ndarray": [[1.0, 2.0]]},
        }


@pytest.mark.parametrize(
    "document",
    [
        {"data": {"tensor": {"shape": [2, 1], "values": [1.5, 2.5]}}},
        {"strData": "hello"},
        {"binData": "YWJj"},
        {"jsonData": {"a": [1, {"b": None}]}},
    ],
)
def test_every_payload_kind_round_trips(identity_channel: grpc.Channel, document: dict[str, Any]) -> None:
    answer = as_dict(pb_grpc.ModelStub(identity_channel).Predict(message(document)))
    key = next(iter(document))
    if key == "data":
        assert answer["data"]["tensor"] == {"shape": [2, 1], "values": [1.5, 2.5]}
        assert answer["data"]["names"] == ["t:0"]
    elif key == "jsonData":
        assert answer["jsonData"] == {"a": [1.0, {"b": None}]}
    else:
        assert answer[key] == document[key]


def test_tensor_values_stay_packed_doubles(identity_channel: grpc.Channel) -> None:
    request = pb.SeldonMessage(data=pb.DefaultData(tensor=pb.Tensor(shape=[1, 3], values=[0.1, 0.2, 0.3])))
    reply = pb_grpc.ModelStub(identity_channel).Predict(request)
    assert list(reply.data.tensor.values) == [0.1, 0.2, 0.3]
    assert list(reply.data.tensor.shape) == [1, 3]


def test_component_services(everything_channel: grpc.Channel) -> None:
    ndarray = message({"data": {"ndarray": [[1, 2]]}})
    generic = pb_grpc.GenericStub(everything_channel)
    transformed = as_dict(pb_grpc.TransformerStub(everything_channel).TransformInput(ndarray))
    assert transformed["data"]["ndarray"] == [[2.0, 4.0]]
    assert as_dict(generic.TransformInput(ndarray)) == transformed
    output = as_dict(pb_grpc.OutputTransformerStub(everything_channel).TransformOutput(ndarray))
    assert output["data"]["ndarray"] == [[2.0, 3.0]]
    assert as_dict(generic.TransformOutput(ndarray)) == output
    routed = as_dict(pb_grpc.RouterStub(everything_channel).Route(ndarray))
    assert routed["data"]["ndarray"] == [[1.0]]
    assert as_dict(generic.Route(ndarray)) == routed
    messages = message(
        {"seldonMessages": [{"data": {"ndarray": [[1, 2]]}}, {"data": {"ndarray": [[3, 4]]}}]},
        pb.SeldonMessageList,
    )
    combined = as_dict(pb_grpc.CombinerStub(everything_channel).Aggregate(messages))
    assert combined["data"]["ndarray"] == [[4.0, 6.0]]
    assert as_dict(generic.Aggregate(messages)) == combined
    feedback = message({"request": {"data": {"ndarray": [[1]]}}, "reward": 1.0}, pb.Feedback)
    for stub in (
        generic,
        pb_grpc.ModelStub(everything_channel),
        pb_grpc.RouterStub(everything_channel),
        pb_grpc.SeldonStub(everything_channel),
    ):
        assert as_dict(stub.SendFeedback(feedback))["data"] == {"ndarray": []}


def test_metadata_rpcs(everything_channel: grpc.Channel) -> None:
    model = as_dict(pb_grpc.ModelStub(everything_channel).Metadata(empty_pb2.Empty()))
    assert model["name"] == "everything"
    assert model["outputs"] == [{"name": "out", "datatype": "FP64", "shape": ["1", "2"]}]
    assert model["custom"] == {"owner": "tests"}
    seldon = pb_grpc.SeldonStub(everything_channel)
    assert as_dict(seldon.ModelMetadata(pb.SeldonModelMetadataRequest(name="everything"))) == model
    graph = as_dict(seldon.GraphMetadata(empty_pb2.Empty()))
    assert graph["name"] == "everything"
    assert graph["models"] == {"classifier": model}
    assert graph["outputs"] == model["outputs"]


@pytest.mark.parametrize(
    ("call", "code", "text"),
    [
        (
            lambda c: pb_grpc.RouterStub(c).Route(message({"data": {"ndarray": [[1]]}})),
            grpc.StatusCode.UNIMPLEMENTED,
            "Route not defined",
        ),
        (
            lambda c: pb_grpc.CombinerStub(c).Aggregate(pb.SeldonMessageList()),
            grpc.StatusCode.INVALID_ARGUMENT,
            "no messages",
        ),
        (
            lambda c: pb_grpc.ModelStub(c).Predict(
                message({"data": {"tensor": {"shape": [2, 2], "values": [1]}}})
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "do not fill shape",
        ),
        (
            lambda c: pb_grpc.ModelStub(c).Predict(pb.SeldonMessage()),
            grpc.StatusCode.INVALID_ARGUMENT,
            "Invalid request data type",
        ),
    ],
)
def test_identity_errors_have_proper_codes(
    identity_channel: grpc.Channel, call: Any, code: grpc.StatusCode, text: str
) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        call(identity_channel)
    assert raised.value.code() == code
    assert raised.value.details().startswith("Exception calling application: ")
    assert text in raised.value.details()


def test_user_exceptions_map_to_codes(everything_channel: grpc.Channel) -> None:
    stub = pb_grpc.ModelStub(everything_channel)
    with pytest.raises(grpc.RpcError) as denied:
        stub.Predict(message({"data": {"ndarray": [[0]]}}))
    assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert denied.value.details() == "Exception calling application: nope"
    with pytest.raises(grpc.RpcError) as failed:
        stub.Predict(message({"data": {"ndarray": [[-1]]}}))
    assert failed.value.code() == grpc.StatusCode.INTERNAL
    assert "negative one is not allowed" in failed.value.details()
    assert as_dict(stub.Predict(message({"data": {"ndarray": [[2, 2]]}})))["data"]["ndarray"] == [[6.0, 6.0]]


def test_v2_grpc_still_served_beside_seldon(identity_server: RunningServer) -> None:
    import numpy as np
    import tritonclient.grpc as grpcclient

    assert identity_server.grpc_address is not None
    client = grpcclient.InferenceServerClient(identity_server.grpc_address)
    tensor = grpcclient.InferInput("x", [1, 3], "FP64")
    tensor.set_data_from_numpy(np.array([[1.0, 2.0, 3.0]]))
    result = client.infer("identity", [tensor]).as_numpy("output-0")
    assert result.tolist() == [[1.0, 2.0, 3.0]]


@pytest.mark.parametrize("method", ["/seldon.protos.Model/Predict", "/seldon.protos.Seldon/Predict"])
def test_bytes_that_are_not_a_seldon_message_are_invalid_argument(
    identity_channel: grpc.Channel, method: str
) -> None:
    call = identity_channel.unary_unary(method)  # bytes in, bytes out
    with pytest.raises(grpc.RpcError) as caught:
        call(b"\xff\xff\xff\xff garbage")
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (
        caught.value.details()
        == "malformed request: Error parsing message with type 'seldon.protos.SeldonMessage'"
    )
    answer = pb_grpc.ModelStub(identity_channel).Predict(message({"data": {"ndarray": [[1.0]]}}))
    assert as_dict(answer)["data"]["ndarray"] == [[1.0]]
