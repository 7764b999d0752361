"""The V2 gRPC protocol against a real ``inferd serve``, with tritonclient.grpc and the raw generated stub."""

from __future__ import annotations

import logging
import struct
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import grpc
import numpy as np
import pytest
import tritonclient.grpc as triton
from tritonclient.grpc import service_pb2 as triton_pb
from tritonclient.utils import InferenceServerException

import inferd
from inferd.core.dataplane import DataPlane
from inferd.core.errors import ModelLoadError
from inferd.core.registry import ModelRegistry
from inferd.core.types import DTYPES, InferenceRequest, InferenceResponse, ServerMetadata
from inferd.protocols.status import INTERNAL_MESSAGE, status_of
from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb
from inferd.protocols.v2._generated import grpc_predict_v2_pb2_grpc as pb_grpc
from inferd.protocols.v2.grpc import add_to_server
from tests.servers import ROOT, RunningServer, serve

GRPC_MODELS = ROOT / "tests" / "models" / "grpc_models.py"
IRIS_ROWS = np.array([[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]], dtype=np.float32)
SECRET = "secret internal detail"

#: One sample per datatype, edge values included (spec §5).
SAMPLES: dict[str, list[Any]] = {
    "BOOL": [True, False, False, True],
    "UINT8": [0, 1, 254, 255],
    "UINT16": [0, 1, 65534, 65535],
    "UINT32": [0, 1, 2**32 - 2, 2**32 - 1],
    "UINT64": [0, 1, 2**63, 2**64 - 1],
    "INT8": [-128, -1, 0, 127],
    "INT16": [-(2**15), -1, 0, 2**15 - 1],
    "INT32": [-(2**31), -1, 0, 2**31 - 1],
    "INT64": [-(2**63), -1, 0, 2**63 - 1],
    "FP16": [0.5, -1.5, 65504.0, 0.0],
    "FP32": [1.5, -2.25, 3.0e38, 1e-30],
    "FP64": [1e300, -2.5, 0.1, 5e-324],
    "BYTES": [b"hello", b"", "ünïcode".encode(), b"\xff\x00\xfe"],
}
#: The typed field of each datatype (spec §5), written out independently of the servicer's table.
TYPED_FIELDS = {
    "BOOL": "bool_contents",
    "UINT8": "uint_contents",
    "UINT16": "uint_contents",
    "UINT32": "uint_contents",
    "UINT64": "uint64_contents",
    "INT8": "int_contents",
    "INT16": "int_contents",
    "INT32": "int_contents",
    "INT64": "int64_contents",
    "FP32": "fp32_contents",
    "FP64": "fp64_contents",
    "BYTES": "bytes_contents",
}


def sample(datatype: str) -> np.ndarray:
    return np.array(SAMPLES[datatype], dtype=DTYPES[datatype]).reshape(2, 2)


# ---- fixtures ----


@pytest.fixture(scope="module")
def models_grpc() -> Iterator[RunningServer]:
    """The toy models of tests/models/grpc_models.py, served by one real process."""
    with serve(str(GRPC_MODELS), "--dialect", "native") as server:
        assert server.grpc_address, "the server did not start gRPC"
        yield server


def _triton(server: RunningServer) -> Iterator[triton.InferenceServerClient]:
    assert server.grpc_address
    client = triton.InferenceServerClient(server.grpc_address)
    yield client
    client.close()


@pytest.fixture
def models(models_grpc: RunningServer) -> Iterator[triton.InferenceServerClient]:
    yield from _triton(models_grpc)


@pytest.fixture
def iris(iris_server: RunningServer) -> Iterator[triton.InferenceServerClient]:
    yield from _triton(iris_server)


def _stub(server: RunningServer) -> Iterator[pb_grpc.GRPCInferenceServiceStub]:
    with server.grpc_channel() as channel:
        yield pb_grpc.GRPCInferenceServiceStub(channel)


@pytest.fixture
def models_stub(models_grpc: RunningServer) -> Iterator[pb_grpc.GRPCInferenceServiceStub]:
    yield from _stub(models_grpc)


@pytest.fixture
def iris_stub(iris_server: RunningServer) -> Iterator[pb_grpc.GRPCInferenceServiceStub]:
    yield from _stub(iris_server)


# ---- helpers ----


def triton_input(name: str, array: np.ndarray) -> triton.InferInput:
    tensor = triton.InferInput(name, list(array.shape), _datatype(array))
    tensor.set_data_from_numpy(array)
    return tensor


def _datatype(array: np.ndarray) -> str:
    return next(name for name, dtype in DTYPES.items() if dtype == array.dtype)


def typed_input(
    name: str, datatype: str, shape: list[int], values: list[Any]
) -> pb.ModelInferRequest.InferInputTensor:
    tensor = pb.ModelInferRequest.InferInputTensor(name=name, datatype=datatype, shape=shape)
    getattr(tensor.contents, TYPED_FIELDS[datatype]).extend(values)
    return tensor


def iris_raw_request(shape: list[int], raw: bytes, datatype: str = "FP32") -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="iris")
    request.inputs.add(name="input-0", datatype=datatype, shape=shape)
    request.raw_input_contents.append(raw)
    return request


def as_triton_result(response: pb.ModelInferResponse) -> triton.InferResult:
    """Read our response with tritonclient's own message class: checks wire compatibility too."""
    return triton.InferResult(triton_pb.ModelInferResponse.FromString(response.SerializeToString()))


def rpc_error(call: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value


def triton_error(call: Callable[[], object]) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as caught:
        call()
    return caught.value


def assert_still_serving(client: triton.InferenceServerClient) -> None:
    assert client.is_server_live()
    result = client.infer("echo", [triton_input("x", np.arange(3, dtype=np.int32))])
    np.testing.assert_array_equal(result.as_numpy("x-out"), np.arange(3, dtype=np.int32))


# ---- health and metadata ----


def test_health_with_tritonclient(iris: triton.InferenceServerClient) -> None:
    assert iris.is_server_live()
    assert iris.is_server_ready()
    assert iris.is_model_ready("iris")
    error = triton_error(lambda: iris.is_model_ready("nope"))
    assert error.status() == "StatusCode.NOT_FOUND"
    assert "nope" in error.message()
    assert triton_error(lambda: iris.is_model_ready("iris", "7")).status() == "StatusCode.NOT_FOUND"


def test_health_with_raw_stub(iris_stub: pb_grpc.GRPCInferenceServiceStub) -> None:
    assert iris_stub.ServerLive(pb.ServerLiveRequest()).live
    assert iris_stub.ServerReady(pb.ServerReadyRequest()).ready
    assert iris_stub.ModelReady(pb.ModelReadyRequest(name="iris")).ready
    error = rpc_error(lambda: iris_stub.ModelReady(pb.ModelReadyRequest(name="nope")))
    assert error.code() == grpc.StatusCode.NOT_FOUND


def test_server_metadata(iris: triton.InferenceServerClient) -> None:
    metadata = iris.get_server_metadata()
    assert metadata.name == "inferd"
    assert metadata.version == inferd.__version__
    assert set(metadata.extensions) == {
        "binary_tensor_data",
        "classification",
        "model_configuration",
        "model_repository",
        "statistics",
    }


def test_model_metadata(iris: triton.InferenceServerClient) -> None:
    metadata = iris.get_model_metadata("iris", as_json=True)
    assert metadata["name"] == "iris"
    assert metadata["platform"] == "python"
    assert metadata["inputs"] == [{"name": "input-0", "datatype": "FP32", "shape": ["-1", "4"]}]
    assert metadata["outputs"] == [
        {"name": "label", "datatype": "INT64", "shape": ["-1"]},
        {"name": "probabilities", "datatype": "FP32", "shape": ["-1", "3"]},
    ]
    assert triton_error(lambda: iris.get_model_metadata("nope")).status() == "StatusCode.NOT_FOUND"


def test_model_metadata_without_signature(models_stub: pb_grpc.GRPCInferenceServiceStub) -> None:
    metadata = models_stub.ModelMetadata(pb.ModelMetadataRequest(name="echo"))
    assert (metadata.name, list(metadata.inputs), list(metadata.outputs)) == ("echo", [], [])


def test_unimplemented_triton_rpcs(iris: triton.InferenceServerClient) -> None:
    shared_memory = triton_error(lambda: iris.get_system_shared_memory_status())
    assert shared_memory.status() == "StatusCode.UNIMPLEMENTED"
    assert iris.is_server_live()


# ---- inference ----


def test_infer_fp32_raw_with_tritonclient(iris: triton.InferenceServerClient) -> None:
    result = iris.infer("iris", [triton_input("input-0", IRIS_ROWS)])
    labels, probabilities = result.as_numpy("label"), result.as_numpy("probabilities")
    assert labels.dtype == np.int64 and labels.tolist() == [0, 2]
    assert probabilities.dtype == np.float32 and probabilities.shape == (2, 3)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    response = result.get_response()
    assert response.model_name == "iris"
    assert [output.name for output in response.outputs] == ["label", "probabilities"]
    assert len(response.raw_output_contents) == 2
    assert not any(output.HasField("contents") for output in response.outputs)


def test_infer_typed_contents_with_raw_stub(iris_stub: pb_grpc.GRPCInferenceServiceStub) -> None:
    request = pb.ModelInferRequest(model_name="iris")
    request.inputs.append(typed_input("input-0", "FP32", [2, 4], IRIS_ROWS.ravel().tolist()))
    response = iris_stub.ModelInfer(request)
    assert [(o.name, o.datatype, list(o.shape)) for o in response.outputs] == [
        ("label", "INT64", [2]),
        ("probabilities", "FP32", [2, 3]),
    ]
    assert len(response.raw_output_contents) == 2
    assert as_triton_result(response).as_numpy("label").tolist() == [0, 2]


@pytest.mark.parametrize("wanted", [["probabilities"], ["probabilities", "label"], ["label"]])
def test_infer_output_selection(iris: triton.InferenceServerClient, wanted: list[str]) -> None:
    outputs = [triton.InferRequestedOutput(name) for name in wanted]
    result = iris.infer("iris", [triton_input("input-0", IRIS_ROWS)], outputs=outputs)
    response = result.get_response()
    assert [output.name for output in response.outputs] == wanted
    assert len(response.raw_output_contents) == len(wanted)
    if "label" in wanted:
        assert result.as_numpy("label").tolist() == [0, 2]


def test_request_id_is_echoed(iris: triton.InferenceServerClient) -> None:
    response = iris.infer("iris", [triton_input("input-0", IRIS_ROWS)], request_id="req-42").get_response()
    assert response.id == "req-42"
    assert iris.infer("iris", [triton_input("input-0", IRIS_ROWS)]).get_response().id == ""


def test_bytes_round_trip(models: triton.InferenceServerClient) -> None:
    text = sample("BYTES")
    result = models.infer("echo", [triton_input("text", text)])
    echoed = result.as_numpy("text-out")
    assert echoed.shape == (2, 2)
    assert echoed.ravel().tolist() == SAMPLES["BYTES"]


@pytest.mark.parametrize("datatype", sorted(SAMPLES))
def test_every_datatype_round_trips_raw(models: triton.InferenceServerClient, datatype: str) -> None:
    array = sample(datatype)
    result = models.infer("echo", [triton_input("x", array)])
    output = result.get_response().outputs[0]
    assert (output.name, output.datatype, list(output.shape)) == ("x-out", datatype, [2, 2])
    echoed = result.as_numpy("x-out")
    assert echoed.dtype == array.dtype
    np.testing.assert_array_equal(echoed, array)


@pytest.mark.parametrize("datatype", sorted(TYPED_FIELDS))
def test_every_datatype_round_trips_typed(
    models_stub: pb_grpc.GRPCInferenceServiceStub, datatype: str
) -> None:
    array = sample(datatype)
    request = pb.ModelInferRequest(model_name="echo")
    request.inputs.append(typed_input("x", datatype, [2, 2], array.ravel().tolist()))
    response = models_stub.ModelInfer(request)
    assert response.outputs[0].datatype == datatype
    assert not response.outputs[0].HasField("contents")
    echoed = as_triton_result(response).as_numpy("x-out")
    assert echoed.dtype == array.dtype
    np.testing.assert_array_equal(echoed, array)


def test_several_inputs_keep_their_own_raw_contents(models: triton.InferenceServerClient) -> None:
    a, b, c = sample("INT16"), sample("BYTES"), np.ones((3, 1), dtype=np.float64)
    result = models.infer("echo", [triton_input("a", a), triton_input("b", b), triton_input("c", c)])
    np.testing.assert_array_equal(result.as_numpy("a-out"), a)
    assert result.as_numpy("b-out").ravel().tolist() == SAMPLES["BYTES"]
    np.testing.assert_array_equal(result.as_numpy("c-out"), c)


def test_parameters_round_trip(
    models: triton.InferenceServerClient, models_stub: pb_grpc.GRPCInferenceServiceStub
) -> None:
    given = {"flag": True, "count": -3, "name": "x", "ratio": 0.25}
    response = models.infer("params", [triton_input("x", np.zeros(1, np.float32))], parameters=given)
    received = response.get_response().parameters
    assert {
        key: getattr(value, value.WhichOneof("parameter_choice")) for key, value in received.items()
    } == given
    assert {key: value.WhichOneof("parameter_choice") for key, value in received.items()} == {
        "flag": "bool_param",
        "count": "int64_param",
        "name": "string_param",
        "ratio": "double_param",
    }

    request = pb.ModelInferRequest(model_name="params")
    request.parameters["big"].uint64_param = 2**64 - 1
    tensor = request.inputs.add(name="x", datatype="FP32", shape=[1])
    tensor.parameters["unit"].string_param = "cm"
    request.raw_input_contents.append(np.zeros(1, np.float32).tobytes())
    answered = models_stub.ModelInfer(request).parameters
    assert answered["big"].uint64_param == 2**64 - 1
    assert answered["x.unit"].string_param == "cm"


def test_large_messages(models: triton.InferenceServerClient) -> None:
    """Well past gRPC's default 4 MiB limit, both ways."""
    array = np.arange(3 * 1024 * 1024, dtype=np.float32)
    result = models.infer("echo", [triton_input("big", array)])
    np.testing.assert_array_equal(result.as_numpy("big-out"), array)


def test_a_large_raw_tensor_round_trips_byte_for_byte(models: triton.InferenceServerClient) -> None:
    """A tensor of many DATA frames (and of windows) both ways, with a small one after it: put
    together in one buffer on the way in, sent from the model's arrays on the way out, every byte
    where it was (noise, and a length that is no multiple of any frame or window size)."""
    big = np.random.default_rng(26).integers(0, 256, 5 * 2**20 + 7, dtype=np.uint8)
    small = np.arange(5, dtype=np.int64)
    for _ in range(2):  # the second call reuses what the first left: no stale bytes either
        result = models.infer("echo", [triton_input("big", big), triton_input("small", small)])
        assert result.as_numpy("big-out").tobytes() == big.tobytes()
        np.testing.assert_array_equal(result.as_numpy("small-out"), small)
        big = big[::-1].copy()
    assert_still_serving(models)


def test_raw_inputs_are_read_wherever_they_are_in_the_message(models_grpc: RunningServer) -> None:
    """Protobuf allows fields in any order: raw_input_contents sent before the inputs they belong to
    (a 16 MiB one and a small one) are matched to them in order, and come back byte for byte."""
    big = np.random.default_rng(26).standard_normal(4 * 2**20, dtype=np.float32).tobytes()
    small = np.arange(3, dtype=np.int32).tobytes()
    raw = pb.ModelInferRequest(raw_input_contents=[big, small]).SerializeToString()
    rest = pb.ModelInferRequest(model_name="echo", id="ordered")
    rest.inputs.add(name="big", datatype="FP32", shape=[4 * 2**20])
    rest.inputs.add(name="small", datatype="INT32", shape=[3])
    options = [("grpc.max_receive_message_length", -1)]
    with grpc.insecure_channel(models_grpc.grpc_address, options=options) as channel:
        infer = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")
        answer = pb.ModelInferResponse.FromString(infer(raw + rest.SerializeToString(), timeout=60))
    assert answer.id == "ordered"
    assert [(output.name, list(output.shape)) for output in answer.outputs] == [
        ("big-out", [4 * 2**20]),
        ("small-out", [3]),
    ]
    assert list(answer.raw_output_contents) == [big, small]


# ---- model repository ----


def test_repository_index(models: triton.InferenceServerClient) -> None:
    index = models.get_model_repository_index()
    entries = {model.name: (model.version, model.state, model.reason) for model in index.models}
    assert entries["echo"] == ("", "READY", "")
    assert {"echo", "stats", "params", "failing", "reloadable", "fragile"} <= entries.keys()


def test_repository_unload_and_load(
    models: triton.InferenceServerClient, models_stub: pb_grpc.GRPCInferenceServiceStub
) -> None:
    def infer() -> triton.InferResult:
        return models.infer("reloadable", [triton_input("x", np.zeros(1, np.float32))])

    assert infer().as_numpy("loads").tolist() == [1]
    models.unload_model("reloadable")
    assert not models.is_model_ready("reloadable")
    assert not models.is_server_ready()
    index = {model.name: model for model in models.get_model_repository_index().models}
    assert (index["reloadable"].state, index["reloadable"].reason) == ("UNAVAILABLE", "unloaded")
    ready_only = models_stub.RepositoryIndex(pb.RepositoryIndexRequest(ready=True)).models
    assert "reloadable" not in {model.name for model in ready_only}
    assert "echo" in {model.name for model in ready_only}
    error = triton_error(infer)
    assert error.status() == "StatusCode.UNAVAILABLE"
    assert "reloadable" in error.message()

    models.load_model("reloadable")
    assert models.is_model_ready("reloadable")
    assert infer().as_numpy("loads").tolist() == [2]


def test_repository_load_failure(models: triton.InferenceServerClient) -> None:
    models.unload_model("fragile")
    error = triton_error(lambda: models.load_model("fragile"))
    expected = status_of(ModelLoadError("")).grpc
    assert error.status() == str(expected)
    assert "fragile" in error.message() and "weights vanished" in error.message()
    index = {model.name: model for model in models.get_model_repository_index().models}
    assert index["fragile"].state == "UNAVAILABLE"
    assert "weights vanished" in index["fragile"].reason
    assert_still_serving(models)


def test_repository_unknown_model(models: triton.InferenceServerClient) -> None:
    assert triton_error(lambda: models.unload_model("nope")).status() == "StatusCode.NOT_FOUND"
    assert triton_error(lambda: models.load_model("nope")).status() == "StatusCode.NOT_FOUND"


# ---- bad requests ----


def _raw_input(request: pb.ModelInferRequest, name: str, array: np.ndarray) -> None:
    request.inputs.add(name=name, datatype=_datatype(array), shape=list(array.shape))
    request.raw_input_contents.append(array.tobytes())


def _request(model: str, build: Callable[[pb.ModelInferRequest], object]) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name=model)
    build(request)
    return request


def _mixed(request: pb.ModelInferRequest) -> None:
    _raw_input(request, "a", np.zeros(2, np.float32))
    request.inputs.append(typed_input("b", "FP32", [2], [1.0, 2.0]))


def _raw_count_mismatch(request: pb.ModelInferRequest) -> None:
    _raw_input(request, "a", np.zeros(2, np.float32))
    request.inputs.add(name="b", datatype="FP32", shape=[2])


def _typed_count_mismatch(request: pb.ModelInferRequest) -> None:
    request.inputs.append(typed_input("a", "INT32", [2, 2], [1, 2, 3]))


def _typed_wrong_field(request: pb.ModelInferRequest) -> None:
    tensor = request.inputs.add(name="a", datatype="INT32", shape=[2])
    tensor.contents.int64_contents.extend([1, 2])


def _typed_out_of_range(request: pb.ModelInferRequest) -> None:
    request.inputs.append(typed_input("a", "INT8", [2], [1, 300]))


def _typed_fp16(request: pb.ModelInferRequest) -> None:
    tensor = request.inputs.add(name="a", datatype="FP16", shape=[1])
    tensor.contents.fp32_contents.append(1.0)


def _unknown_datatype(request: pb.ModelInferRequest) -> None:
    request.inputs.add(name="a", datatype="FLOAT", shape=[1])
    request.raw_input_contents.append(b"\0\0\0\0")


def _negative_shape(request: pb.ModelInferRequest) -> None:
    request.inputs.add(name="a", datatype="FP32", shape=[-1, 0])
    request.raw_input_contents.append(b"")


def _duplicate_input(request: pb.ModelInferRequest) -> None:
    _raw_input(request, "a", np.zeros(1, np.float32))
    _raw_input(request, "a", np.zeros(1, np.float32))


def _truncated_bytes(request: pb.ModelInferRequest) -> None:
    request.inputs.add(name="a", datatype="BYTES", shape=[1])
    request.raw_input_contents.append(struct.pack("<I", 10) + b"short")


def _classification(request: pb.ModelInferRequest) -> None:
    _raw_input(request, "a", np.zeros(1, np.float32))
    request.outputs.add(name="a-out").parameters["classification"].int64_param = 0


def _unset_parameter(request: pb.ModelInferRequest) -> None:
    _raw_input(request, "a", np.zeros(1, np.float32))
    request.parameters["empty"].SetInParent()


BAD_ECHO_REQUESTS = {
    "mixed raw and typed": (_mixed, "typed contents but the request uses raw_input_contents"),
    "raw count mismatch": (_raw_count_mismatch, "1 raw_input_contents for 2 inputs"),
    "typed count mismatch": (_typed_count_mismatch, "input 'a' has 3 elements but shape [2, 2] needs 4"),
    "typed wrong field": (_typed_wrong_field, "contents.int_contents, but it sets contents.int64_contents"),
    "typed out of range": (_typed_out_of_range, "outside the range of INT8"),
    "typed FP16": (_typed_fp16, "FP16, which gRPC carries only in raw_input_contents"),
    "unknown datatype": (_unknown_datatype, "unknown datatype 'FLOAT'"),
    "negative shape": (_negative_shape, "dimensions must not be negative"),
    "duplicate input": (_duplicate_input, "input 'a' appears twice"),
    "truncated BYTES": (_truncated_bytes, "runs past the end"),
    "classification of 0": (
        _classification,
        "classification must be a whole number of classes of at least 1",
    ),
    "unset parameter": (_unset_parameter, "parameter 'empty' has no value"),
}


@pytest.mark.parametrize("case", sorted(BAD_ECHO_REQUESTS))
def test_malformed_requests_are_invalid_argument(
    models: triton.InferenceServerClient, models_stub: pb_grpc.GRPCInferenceServiceStub, case: str
) -> None:
    build, message = BAD_ECHO_REQUESTS[case]
    error = rpc_error(lambda: models_stub.ModelInfer(_request("echo", build)))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in error.details()
    assert_still_serving(models)


def test_wrong_shape_is_invalid_argument(
    iris: triton.InferenceServerClient, models: triton.InferenceServerClient
) -> None:
    error = triton_error(lambda: iris.infer("iris", [triton_input("input-0", IRIS_ROWS[:, :3].copy())]))
    assert error.status() == "StatusCode.INVALID_ARGUMENT"
    assert error.message() == "input 'input-0' has shape [2, 3], the model expects [-1, 4]"
    assert iris.infer("iris", [triton_input("input-0", IRIS_ROWS)]).as_numpy("label").tolist() == [0, 2]


def test_wrong_datatype_is_invalid_argument(iris: triton.InferenceServerClient) -> None:
    error = triton_error(lambda: iris.infer("iris", [triton_input("input-0", IRIS_ROWS.astype(np.float64))]))
    assert error.status() == "StatusCode.INVALID_ARGUMENT"
    assert "datatype FP64, the model expects FP32" in error.message()


def test_wrong_data_size_is_invalid_argument(iris_stub: pb_grpc.GRPCInferenceServiceStub) -> None:
    error = rpc_error(lambda: iris_stub.ModelInfer(iris_raw_request([2, 4], IRIS_ROWS.tobytes()[:12])))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.details() == "input 'input-0' has 12 bytes of data but shape [2, 4] of FP32 needs 32"
    assert iris_stub.ModelInfer(iris_raw_request([2, 4], IRIS_ROWS.tobytes())).outputs


def test_unknown_input_and_missing_input(iris_stub: pb_grpc.GRPCInferenceServiceStub) -> None:
    request = iris_raw_request([2, 4], IRIS_ROWS.tobytes())
    request.inputs[0].name = "features"
    error = rpc_error(lambda: iris_stub.ModelInfer(request))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "unknown input 'features'" in error.details()
    error = rpc_error(lambda: iris_stub.ModelInfer(pb.ModelInferRequest(model_name="iris")))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "missing input(s) ['input-0']" in error.details()


@pytest.mark.parametrize("model", ["iris", "echo"])
def test_unknown_output_is_invalid_argument(
    iris: triton.InferenceServerClient, models: triton.InferenceServerClient, model: str
) -> None:
    client, name = (iris, "input-0") if model == "iris" else (models, "x")
    outputs = [triton.InferRequestedOutput("nope")]
    error = triton_error(lambda: client.infer(model, [triton_input(name, IRIS_ROWS)], outputs=outputs))
    assert error.status() == "StatusCode.INVALID_ARGUMENT"
    assert "unknown output 'nope'" in error.message()
    assert client.is_server_live()


def test_unknown_model_is_not_found(models: triton.InferenceServerClient) -> None:
    error = triton_error(lambda: models.infer("nope", [triton_input("x", IRIS_ROWS)]))
    assert error.status() == "StatusCode.NOT_FOUND"
    assert "model 'nope'" in error.message()
    error = triton_error(lambda: models.infer("echo", [triton_input("x", IRIS_ROWS)], model_version="3"))
    assert error.status() == "StatusCode.NOT_FOUND"
    assert_still_serving(models)


def test_failing_model_is_internal_with_generic_message(
    models: triton.InferenceServerClient, models_grpc: RunningServer
) -> None:
    error = triton_error(lambda: models.infer("failing", [triton_input("x", IRIS_ROWS)]))
    assert error.status() == "StatusCode.INTERNAL"
    assert "failing" in error.message()
    assert SECRET not in error.message() and "RuntimeError" not in error.message()
    assert_still_serving(models)


# ---- the servicer in-process (paths a well-behaved server process does not reach) ----


class BadParameters(inferd.Model):
    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        return InferenceResponse({"y": np.zeros(1)}, parameters={"labels": ["a", "b"]})  # type: ignore[dict-item]


@pytest.fixture
async def in_process_stub() -> AsyncIterator[Any]:
    registry = ModelRegistry()
    registry.add("bad", BadParameters)
    await registry.load_all()
    server = grpc.aio.server()
    add_to_server(server, DataPlane(registry, ServerMetadata("inferd", inferd.__version__, ())))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield pb_grpc.GRPCInferenceServiceStub(channel)
    finally:
        await server.stop(None)


async def test_unexpected_servicer_error_is_internal_and_logged(
    in_process_stub: Any, caplog: pytest.LogCaptureFixture
) -> None:
    request = pb.ModelInferRequest(model_name="bad")
    with caplog.at_level(logging.ERROR, logger="inferd.protocols.v2.grpc"):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await in_process_stub.ModelInfer(request)
    assert caught.value.code() == grpc.StatusCode.INTERNAL
    assert caught.value.details() == INTERNAL_MESSAGE
    assert "labels" in caplog.text
    assert (await in_process_stub.ServerLive(pb.ServerLiveRequest())).live
