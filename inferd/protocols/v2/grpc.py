"""V2 gRPC servicer (``inference.GRPCInferenceService``). Each RPC decodes, calls the data plane, and encodes.

Inputs arrive either all in ``raw_input_contents`` (what tritonclient sends) or all as typed
``contents``; outputs always leave in ``raw_output_contents``, the only place tritonclient reads them.
Errors become the gRPC status of `inferd.protocols.status`, with the same message REST sends.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
from google.protobuf import json_format

from inferd.core import tracing
from inferd.core.dataplane import DataPlane
from inferd.core.errors import InferdError, InvalidInput
from inferd.core.types import (
    DTYPES,
    Array,
    InferenceRequest,
    InferenceResponse,
    ModelMetadata,
    Parameters,
    ParameterValue,
    RequestedOutput,
    Tensors,
    TensorSpec,
    datatype_of,
)
from inferd.protocols import cloudevents
from inferd.protocols.grpc_handlers import stream_stream, unary_handlers, unary_unary
from inferd.protocols.status import error_message, status_of
from inferd.protocols.v2 import codecs, grpc_stream, grpc_wire
from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb
from inferd.protocols.v2.repository import load_request

logger = logging.getLogger("inferd.protocols.v2.grpc")

PROTOCOL = "grpc"
SERVICE = "/inference.GRPCInferenceService/"
#: Health and readiness: answered without authentication, for probes.
HEALTH_METHODS = frozenset(SERVICE + method for method in ("ServerLive", "ServerReady", "ModelReady"))

#: The typed ``InferTensorContents`` field of each datatype and the datatype that field holds on the
#: wire (INT8 travels as int32, UINT16 as uint32, ...). FP16 has no typed field: raw only.
CONTENTS_FIELDS: dict[str, tuple[str, str]] = {
    "BOOL": ("bool_contents", "BOOL"),
    "UINT8": ("uint_contents", "UINT32"),
    "UINT16": ("uint_contents", "UINT32"),
    "UINT32": ("uint_contents", "UINT32"),
    "UINT64": ("uint64_contents", "UINT64"),
    "INT8": ("int_contents", "INT32"),
    "INT16": ("int_contents", "INT32"),
    "INT32": ("int_contents", "INT32"),
    "INT64": ("int64_contents", "INT64"),
    "FP32": ("fp32_contents", "FP32"),
    "FP64": ("fp64_contents", "FP64"),
    "BYTES": ("bytes_contents", "BYTES"),
}
_INT64 = np.iinfo(np.int64)
_UINT64 = np.iinfo(np.uint64)

Context = Any  # grpc.aio.ServicerContext; grpcio ships no type hints
Request = TypeVar("Request")
Response = TypeVar("Response")
Handler = Callable[[Any, Request, Context], Awaitable[Response]]


def add_to_server(
    server: Any,
    dataplane: DataPlane,
    make: Callable[..., Any] = unary_unary,
    make_stream: Callable[..., Any] = stream_stream,
) -> None:
    """Serve ``inference.GRPCInferenceService`` for ``dataplane`` on ``server``, ``ModelInfer``
    with the (de)serializers of `inferd.protocols.v2.grpc_wire` in place of protobuf's, so no call
    reaches it as a protobuf message. The handlers come from the service's descriptor
    (`grpc_handlers.unary_handlers`), made by ``make``: a grpc.aio server needs
    ``grpc.unary_unary_rpc_method_handler``; inferd's own server takes the default and never loads
    grpcio. ``ModelStreamInfer`` (`grpc_stream`) is made by ``make_stream`` (grpc.aio:
    ``grpc.stream_stream_rpc_method_handler``). Every method is registered by name, which both
    servers serve first."""
    servicer = V2Servicer(dataplane)
    handlers = unary_handlers(pb, SERVICE.strip("/"), servicer, make)
    handlers["ModelStreamInfer"] = grpc_stream.handler(servicer.infer, make_stream)
    handlers["ModelInfer"] = handlers["ModelInfer"]._replace(
        request_deserializer=grpc_wire.parse_request, response_serializer=grpc_wire.serialize_response
    )
    server.add_registered_method_handlers(SERVICE.strip("/"), handlers)


def _answer_errors(handler: Handler[Request, Response]) -> Handler[Request, Response]:
    """Abort the call with the status table's code and message when ``handler`` raises."""

    @functools.wraps(handler)
    async def call(self: Any, request: Request, context: Context) -> Response:
        try:
            return await handler(self, request, context)
        except Exception as exc:
            if not isinstance(exc, InferdError):
                logger.exception("gRPC %s failed", handler.__name__)
            await context.abort(status_of(exc).grpc, error_message(exc))
            raise  # abort() raises; this line only keeps the type checker informed

    return call


class V2Servicer:
    """The RPCs of ``GRPCInferenceService``; method names are the RPC names."""

    def __init__(self, dataplane: DataPlane) -> None:
        self.dataplane = dataplane

    @_answer_errors
    async def ServerLive(self, request: pb.ServerLiveRequest, context: Context) -> pb.ServerLiveResponse:
        return pb.ServerLiveResponse(live=self.dataplane.live())

    @_answer_errors
    async def ServerReady(self, request: pb.ServerReadyRequest, context: Context) -> pb.ServerReadyResponse:
        return pb.ServerReadyResponse(ready=self.dataplane.ready())

    @_answer_errors
    async def ModelReady(self, request: pb.ModelReadyRequest, context: Context) -> pb.ModelReadyResponse:
        return pb.ModelReadyResponse(ready=self.dataplane.model_ready(request.name, request.version or None))

    @_answer_errors
    async def ServerMetadata(
        self, request: pb.ServerMetadataRequest, context: Context
    ) -> pb.ServerMetadataResponse:
        server = self.dataplane.server_metadata()
        return pb.ServerMetadataResponse(
            name=server.name, version=server.version, extensions=list(server.extensions)
        )

    @_answer_errors
    async def ModelMetadata(
        self, request: pb.ModelMetadataRequest, context: Context
    ) -> pb.ModelMetadataResponse:
        return encode_metadata(self.dataplane.model_metadata(request.name, request.version or None))

    @_answer_errors
    async def ModelInfer(self, request: grpc_wire.InferCall, context: Context) -> grpc_wire.InferAnswer:
        return await self.infer(request)

    async def infer(self, request: grpc_wire.InferCall) -> grpc_wire.InferAnswer:
        """One inference, as ``ModelInfer`` and each message of ``ModelStreamInfer`` run it."""
        payloads, tracer = self.dataplane.payloads, tracing.tracer
        logged = None if payloads is None else cloudevents.log_grpc(payloads, request)
        if tracer is None:
            decoded = decode_request(request)
        else:
            decoded = tracer.step("inferd.decode", decode_request, request)
        message = request.message
        response = await self.dataplane.infer(
            message.model_name, message.model_version or None, decoded, PROTOCOL
        )
        if tracer is None:
            answer = encode_response(response)
        else:
            answer = tracer.step("inferd.encode", encode_response, response)
        if logged is not None:
            cloudevents.log_grpc_response(logged, answer)
        return answer

    @_answer_errors
    async def ModelStatistics(
        self, request: pb.ModelStatisticsRequest, context: Context
    ) -> pb.ModelStatisticsResponse:
        stats = self.dataplane.model_statistics(request.name or None, request.version or None)
        answer = pb.ModelStatisticsResponse()
        json_format.ParseDict({"model_stats": stats}, answer)
        return answer

    @_answer_errors
    async def ModelConfig(self, request: pb.ModelConfigRequest, context: Context) -> pb.ModelConfigResponse:
        config = self.dataplane.model_config(request.name, request.version or None)
        return pb.ModelConfigResponse(config=config_message(config))

    @_answer_errors
    async def RepositoryIndex(
        self, request: pb.RepositoryIndexRequest, context: Context
    ) -> pb.RepositoryIndexResponse:
        index = pb.RepositoryIndexResponse()
        for entry in self.dataplane.repository_index(ready_only=request.ready):
            index.models.add(name=entry.name, version=entry.version, state=entry.state, reason=entry.reason)
        return index

    @_answer_errors
    async def RepositoryModelLoad(
        self, request: pb.RepositoryModelLoadRequest, context: Context
    ) -> pb.RepositoryModelLoadResponse:
        found = load_request(_repository_parameters(request.parameters), files_are_base64=False)
        await self.dataplane.load_model(request.model_name, None, found.config, found.files)
        return pb.RepositoryModelLoadResponse()

    @_answer_errors
    async def RepositoryModelUnload(
        self, request: pb.RepositoryModelUnloadRequest, context: Context
    ) -> pb.RepositoryModelUnloadResponse:
        await self.dataplane.unload_model(request.model_name)
        return pb.RepositoryModelUnloadResponse()


def _repository_parameters(parameters: Mapping[str, pb.ModelRepositoryParameter]) -> dict[str, Any]:
    """Each parameter's value, whichever of its kinds was set."""
    return {
        key: getattr(value, value.WhichOneof("parameter_choice") or "string_param")
        for key, value in parameters.items()
    }


# ---- metadata ----


def config_message(config: Mapping[str, Any]) -> pb.ModelConfig:
    """Triton's ``ModelConfig`` of a JSON configuration: the fields inferd's proto declares (keys a
    load gave that it does not declare are left out; REST answers them); a key whose value does not
    fit its field is left out too rather than fail the call."""
    message = pb.ModelConfig()
    for key, value in config.items():
        field = pb.ModelConfig()
        try:
            json_format.ParseDict({key: value}, field, ignore_unknown_fields=True)
        except json_format.ParseError as exc:
            logger.warning(
                "model %s: config key %r does not fit Triton's ModelConfig: %s", config.get("name"), key, exc
            )
            continue
        message.MergeFrom(field)
    return message


def encode_metadata(metadata: ModelMetadata) -> pb.ModelMetadataResponse:
    return pb.ModelMetadataResponse(
        name=metadata.name,
        versions=list(metadata.versions),
        platform=metadata.platform,
        inputs=[_tensor_metadata(spec) for spec in metadata.inputs],
        outputs=[_tensor_metadata(spec) for spec in metadata.outputs],
    )


def _tensor_metadata(spec: TensorSpec) -> pb.ModelMetadataResponse.TensorMetadata:
    return pb.ModelMetadataResponse.TensorMetadata(
        name=spec.name, datatype=spec.datatype, shape=list(spec.shape)
    )


# ---- inference request ----


def decode_request(request: grpc_wire.InferCall) -> InferenceRequest:
    """The core request of a ``ModelInferRequest``; malformed tensors or parameters are InvalidInput.
    Raw inputs are numpy views of the received bytes."""
    message = request.message
    inputs, input_parameters = decode_inputs(message.inputs, request.raw)
    outputs = [_requested_output(output) for output in message.outputs] or None
    return InferenceRequest(
        inputs, decode_parameters(message.parameters), message.id or None, outputs, input_parameters
    )


def decode_inputs(
    tensors: Sequence[pb.ModelInferRequest.InferInputTensor], raw: Sequence[bytes | memoryview]
) -> tuple[Tensors, dict[str, Parameters]]:
    """Input arrays and parameters by name; ``raw[i]`` is the data of ``tensors[i]`` when raw is used."""
    if raw:
        _check_all_raw(tensors, raw)
    inputs: Tensors = {}
    parameters: dict[str, Parameters] = {}
    for index, tensor in enumerate(tensors):
        if tensor.name in inputs:
            raise InvalidInput(f"input '{tensor.name}' appears twice")
        shape = list(tensor.shape)
        if raw:
            inputs[tensor.name] = codecs.decode_raw(tensor.name, tensor.datatype, shape, raw[index])
        else:
            inputs[tensor.name] = decode_contents(tensor, shape)
        parameters[tensor.name] = decode_parameters(tensor.parameters)
    return inputs, parameters


def _check_all_raw(
    tensors: Sequence[pb.ModelInferRequest.InferInputTensor], raw: Sequence[bytes | memoryview]
) -> None:
    """With ``raw_input_contents``, every input's data is there and no input has typed contents."""
    for tensor in tensors:
        if tensor.contents.ListFields():
            raise InvalidInput(
                f"input '{tensor.name}' has typed contents but the request uses raw_input_contents; "
                "send the data of all inputs one way or the other"
            )
    if len(raw) != len(tensors):
        raise InvalidInput(
            f"the request has {len(raw)} raw_input_contents for {len(tensors)} inputs; "
            "raw_input_contents[i] must hold the data of inputs[i]"
        )


def decode_contents(tensor: pb.ModelInferRequest.InferInputTensor, shape: list[int]) -> Array:
    """An input's typed ``contents`` as an array of ``shape``."""
    name, datatype = tensor.name, tensor.datatype
    dtype = codecs.dtype_of(name, datatype)
    if datatype not in CONTENTS_FIELDS:
        raise InvalidInput(
            f"input '{name}' has datatype {datatype}, which gRPC carries only in raw_input_contents"
        )
    field, wire_datatype = CONTENTS_FIELDS[datatype]
    _check_contents_field(tensor, field)
    values = getattr(tensor.contents, field)
    expected = codecs.checked_count(name, shape, dtype)
    if len(values) != expected:
        raise InvalidInput(f"input '{name}' has {len(values)} elements but shape {shape} needs {expected}")
    if datatype == "BYTES":
        array = np.empty(expected, dtype=object)
        array[:] = list(values)
    else:
        array = _narrow(name, datatype, np.array(values, dtype=DTYPES[wire_datatype]), dtype)
    return array.reshape(shape)


def _check_contents_field(tensor: pb.ModelInferRequest.InferInputTensor, field: str) -> None:
    others = [f"contents.{used.name}" for used, _ in tensor.contents.ListFields() if used.name != field]
    if others:
        raise InvalidInput(
            f"input '{tensor.name}' has datatype {tensor.datatype}, whose elements belong in "
            f"contents.{field}, but it sets {', '.join(others)}"
        )


def _narrow(name: str, datatype: str, wide: Array, dtype: np.dtype[Any]) -> Array:
    """``wide`` (the wire type) as ``dtype``, refusing values the narrower type cannot hold."""
    if wide.dtype == dtype:
        return wide
    info = np.iinfo(dtype)
    if wide.size and (wide.min() < info.min or wide.max() > info.max):
        raise InvalidInput(f"input '{name}' has values outside the range of {datatype}")
    return wide.astype(dtype)


def _requested_output(output: pb.ModelInferRequest.InferRequestedOutputTensor) -> RequestedOutput:
    return codecs.requested_output(output.name, decode_parameters(output.parameters))


def decode_parameters(parameters: Mapping[str, pb.InferParameter]) -> Parameters:
    return {key: _parameter_value(key, value) for key, value in parameters.items()}


def _parameter_value(key: str, parameter: pb.InferParameter) -> ParameterValue:
    choice = parameter.WhichOneof("parameter_choice")
    if choice is None:
        raise InvalidInput(f"parameter '{key}' has no value")
    value: ParameterValue = getattr(parameter, choice)
    return value


# ---- inference response ----


def encode_response(response: InferenceResponse) -> grpc_wire.InferAnswer:
    """A ``ModelInferResponse`` carrying every output in ``raw_output_contents``, in order: the
    arrays' own memory where it already is the raw layout (`codecs.raw_view`)."""
    message = pb.ModelInferResponse(
        model_name=response.model_name, model_version=response.model_version or "", id=response.id or ""
    )
    for key, value in response.parameters.items():
        _set_parameter(message.parameters[key], key, value)
    raw = []
    for name, array in response.outputs.items():
        message.outputs.add(name=name, datatype=datatype_of(array), shape=list(array.shape))
        raw.append(codecs.raw_view(array))
    return grpc_wire.InferAnswer(message, raw)


def _set_parameter(target: pb.InferParameter, key: str, value: object) -> None:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        target.bool_param = value
    elif isinstance(value, int) and _INT64.min <= value <= _INT64.max:
        target.int64_param = value
    elif isinstance(value, int) and 0 <= value <= _UINT64.max:
        target.uint64_param = value
    elif isinstance(value, float):
        target.double_param = value
    elif isinstance(value, str):
        target.string_param = value
    else:
        raise TypeError(f"response parameter '{key}' = {value!r} has no V2 parameter type")
