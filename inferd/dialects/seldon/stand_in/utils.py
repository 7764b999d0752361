"""``seldon_core.utils`` without seldon-core: the message helpers components and their unit tests
call, made of the protocol's codec (`inferd.protocols.seldon`: `payload`, `tftensor` and generated
protobuf code).

Names, arguments and results follow seldon-core 1.18: JSON ↔ ``SeldonMessage`` / ``Feedback``
conversions through protobuf's JSON mapping (numbers come back as doubles), arrays ↔ ``DefaultData``
in the three data types (``tftensor`` needs no TensorFlow here), and `construct_response_json` /
`construct_response`, which build an answer as the server does: the request's data type mirrored,
``names`` from ``feature_names()`` or ``class_names()``, ``meta`` with the request's tags, metrics,
puid and path plus the component's ``tags()``. Bad input raises `SeldonMicroserviceException`, as
seldon-core's helpers do, so code catching that keeps working.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from google.protobuf import any_pb2, json_format
from google.protobuf.message import Message
from google.protobuf.struct_pb2 import ListValue

from inferd.protocols.seldon import payload, tftensor
from inferd.protocols.seldon._generated import prediction_pb2
from inferd.protocols.seldon.errors import SeldonError, SeldonMicroserviceException, is_not_implemented

NOT_IMPLEMENTED = "NOT_IMPLEMENTED"
#: What a ``data`` object's key says about the data type of an answer to it (anything else: ndarray).
DATA_KINDS = ("tensor", "tftensor")


@contextlib.contextmanager
def seldon_exceptions() -> Iterator[None]:
    """The dialect's `SeldonError` (and protobuf's parse errors) as the `SeldonMicroserviceException`
    user code expects from these helpers."""
    try:
        yield
    except SeldonError as exc:
        raise SeldonMicroserviceException(exc.info, exc.status, reason=exc.reason) from None
    except json_format.ParseError as exc:
        raise SeldonMicroserviceException(f"Invalid JSON: {exc}") from None


# --- JSON ↔ protobuf ------------------------------------------------------------------------------


def _parse(document: Any, message: Message, ignore_unknown_fields: bool = False) -> Any:
    with seldon_exceptions():
        return json_format.ParseDict(document, message, ignore_unknown_fields=ignore_unknown_fields)


def _as_json(message: Message) -> dict[str, Any]:
    document: dict[str, Any] = json_format.MessageToDict(message)
    return document


def json_to_seldon_message(message_json: Any) -> Any:
    """A ``SeldonMessage`` of its JSON form (None is the empty message)."""
    return _parse({} if message_json is None else message_json, prediction_pb2.SeldonMessage())


def json_to_seldon_model_metadata(metadata_json: Any) -> Any:
    """A ``SeldonModelMetadata`` of its JSON form; unknown fields are left out."""
    document = {} if metadata_json is None else metadata_json
    return _parse(document, prediction_pb2.SeldonModelMetadata(), ignore_unknown_fields=True)


def json_to_feedback(message_json: Any) -> Any:
    return _parse(message_json, prediction_pb2.Feedback())


def json_to_seldon_messages(message_json: Any) -> Any:
    return _parse(message_json, prediction_pb2.SeldonMessageList())


def seldon_message_to_json(message_proto: Message) -> dict[str, Any]:
    return _as_json(message_proto)


def seldon_messages_to_json(message_protos: Message) -> dict[str, Any]:
    return _as_json(message_protos)


def feedback_to_json(message_proto: Message) -> dict[str, Any]:
    return _as_json(message_proto)


# --- protobuf → values ----------------------------------------------------------------------------


def get_data_from_proto(request: Any) -> Any:
    """The payload of a ``SeldonMessage``: an array for ``data``, bytes, str, a dict for
    ``jsonData``, or the ``customData`` Any."""
    kind = request.WhichOneof("data_oneof")
    if kind == "data":
        return grpc_datadef_to_array(request.data)
    if kind == "jsonData":
        return json_format.MessageToDict(request.jsonData)
    if kind in ("binData", "strData", "customData"):
        return getattr(request, kind)
    raise SeldonMicroserviceException("Unknown data in SeldonMessage")


def grpc_datadef_to_array(datadef: Any) -> np.ndarray:
    """The array of a ``DefaultData``: a tensor's values as float64, an ndarray as numpy reads the
    lists, a tftensor in its own dtype; no data is an empty array."""
    kind = datadef.WhichOneof("data_oneof")
    with seldon_exceptions():
        if kind == "tftensor":
            return tftensor.proto_to_array(datadef.tftensor)
        if kind == "tensor":
            tensor = {"values": list(datadef.tensor.values), "shape": list(datadef.tensor.shape)}
            return payload.datadef_to_array({"tensor": tensor})[1].astype(np.float64)
        if kind == "ndarray":
            return payload.datadef_to_array({"ndarray": json_format.MessageToDict(datadef.ndarray)})[1]
    return np.array([])


def get_meta_from_proto(request: Any) -> dict[str, Any]:
    return _as_json(request.meta)


# --- values → protobuf or JSON --------------------------------------------------------------------


def array_to_rest_datadef(
    data_type: str, array: np.ndarray, names: Iterable[str] | None = None
) -> dict[str, Any]:
    """The JSON ``data`` object of ``array`` as ``data_type`` (``tensor``, ``tftensor``, else ndarray)."""
    datadef: dict[str, Any] = {"names": [] if names is None else names}
    if data_type == "tensor":
        datadef["tensor"] = {"shape": array.shape, "values": array.ravel().tolist()}
    elif data_type == "tftensor":
        with seldon_exceptions():
            datadef["tftensor"] = tftensor.from_array(array)
    else:
        datadef["ndarray"] = array.tolist()
    return datadef


def array_to_grpc_datadef(data_type: str, array: np.ndarray, names: Iterable[str] | None = None) -> Any:
    """The ``DefaultData`` of ``array`` as ``data_type`` (``tensor``, ``tftensor``, else ndarray)."""
    datadef = prediction_pb2.DefaultData(names=list(names or []))
    if data_type == "tensor":
        datadef.tensor.shape.extend(array.shape)
        datadef.tensor.values.extend(array.ravel().tolist())
    elif data_type == "tftensor":
        with seldon_exceptions():
            datadef.tftensor.CopyFrom(tftensor.array_to_proto(array))
    else:
        array_to_list_value(array, datadef.ndarray)
    return datadef


def array_to_list_value(array: np.ndarray, lv: ListValue | None = None) -> ListValue:
    """``array``'s rows as nested lists, appended to ``lv`` (a new ``ListValue`` by default)."""
    target = ListValue() if lv is None else lv
    target.extend(np.asarray(array).tolist())
    return target


# --- answers as the server builds them ------------------------------------------------------------


def construct_response_json(
    user_model: Any,
    is_request: bool,
    client_request_raw: Any,
    client_raw_response: Any,
    meta: dict[str, Any] | None = None,
    custom_metrics: list[dict[str, Any]] | None = None,
    runtime_tags: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON answer to ``client_request_raw`` carrying ``client_raw_response`` (integers stay
    integers; a tensor's ``shape`` is a tuple, as in seldon-core)."""
    response = _response_document(
        user_model, is_request, client_request_raw, client_raw_response, meta, custom_metrics, runtime_tags
    )
    tensor = response.get("data", {}).get("tensor")
    if tensor is not None:
        tensor["shape"] = tuple(tensor["shape"])
    return response


def construct_response(
    user_model: Any,
    is_request: bool,
    client_request: Any,
    client_raw_response: Any,
    meta: dict[str, Any] | None = None,
    custom_metrics: list[dict[str, Any]] | None = None,
    runtime_tags: dict[str, Any] | None = None,
) -> Any:
    """The ``SeldonMessage`` answer to ``client_request`` carrying ``client_raw_response`` (an array,
    list, str, bytes, dict or protobuf ``Any``)."""
    request = _as_json(client_request)
    if isinstance(client_raw_response, any_pb2.Any):
        document = _response_document(user_model, is_request, request, {}, meta, custom_metrics, runtime_tags)
        message = _parse({"meta": document["meta"]}, prediction_pb2.SeldonMessage())
        message.customData.CopyFrom(client_raw_response)
        return message
    document = _response_document(
        user_model, is_request, request, client_raw_response, meta, custom_metrics, runtime_tags
    )
    return _parse(document, prediction_pb2.SeldonMessage())


def _response_document(
    user_model: Any,
    is_request: bool,
    request: Any,
    result: Any,
    meta: dict[str, Any] | None,
    custom_metrics: list[dict[str, Any]] | None,
    runtime_tags: dict[str, Any] | None,
) -> dict[str, Any]:
    request = request if isinstance(request, dict) else {}
    data = request.get("data") if isinstance(request.get("data"), dict) else None
    kind = "" if data is None else next((key for key in DATA_KINDS if key in data), "ndarray")
    with seldon_exceptions():
        response = payload.encode(result, kind, lambda: _class_names(user_model))
    if is_request and "data" in response:
        response["data"]["names"] = _feature_names(user_model, (data or {}).get("names") or [])
    response["meta"] = _answer_meta(user_model, request, meta or {}, custom_metrics, runtime_tags)
    return response


def _answer_meta(
    user_model: Any,
    request: dict[str, Any],
    meta: dict[str, Any],
    custom_metrics: list[dict[str, Any]] | None,
    runtime_tags: dict[str, Any] | None,
) -> dict[str, Any]:
    """The answer's meta: the given meta's tags and metrics with the component's ``tags()``, the
    runtime tags and ``custom_metrics`` added, the request's puid, and this unit in the path."""
    answer: dict[str, Any] = {}
    tags = {**(meta.get("tags") or {}), **_tags(user_model), **(runtime_tags or {})}
    if tags:
        answer["tags"] = tags
    metrics = [*(meta.get("metrics") or []), *(custom_metrics or [])]
    if metrics:
        answer["metrics"] = metrics
    request_meta = request.get("meta")
    puid = request_meta.get("puid") if isinstance(request_meta, dict) else None
    if puid:
        answer["puid"] = puid
    path = {**get_request_path(), **(meta.get("requestPath") or {})}
    if path:
        answer["requestPath"] = path
    return answer


def _optional_call(user_model: Any, name: str) -> Any:
    """``user_model.<name>()`` (or the attribute itself when it is not callable, as a deprecated
    ``class_names`` list is); None when it has no such attribute or its method is a stub."""
    method = getattr(user_model, name, None)
    if not callable(method):
        return method
    try:
        return method()
    except Exception as exc:
        if is_not_implemented(exc):
            return None
        raise


def _tags(user_model: Any) -> dict[str, Any]:
    return dict(_optional_call(user_model, "tags") or {})


def _class_names(user_model: Any) -> list[str] | None:
    names = _optional_call(user_model, "class_names")
    return None if names is None else list(names)


def _feature_names(user_model: Any, original: list[str]) -> Any:
    names = _optional_call(user_model, "feature_names")
    return original if names is None else names


# --- requests taken apart -------------------------------------------------------------------------


def extract_request_parts_json(request: Any) -> tuple[Any, dict[str, Any] | None, Any, str]:
    """(features, meta, the ``data`` object or None, payload key) of a JSON message."""
    with seldon_exceptions():
        decoded = payload.decode(request)
    key = decoded.kind if decoded.kind in payload.PAYLOAD_KEYS else "data"
    return decoded.features, request.get("meta"), request.get("data"), key


def extract_request_parts(request: Any) -> tuple[Any, dict[str, Any], Any, str | None]:
    """(features, meta, ``DefaultData``, payload field) of a ``SeldonMessage``."""
    return (
        get_data_from_proto(request),
        get_meta_from_proto(request),
        request.data,
        request.WhichOneof("data_oneof"),
    )


def extract_feedback_request_parts(request: Any) -> tuple[Any, np.ndarray, np.ndarray, float]:
    """(the request's ``DefaultData``, its features, the truth's features, the reward) of a ``Feedback``."""
    features = grpc_datadef_to_array(request.request.data)
    truth = grpc_datadef_to_array(request.truth.data)
    return request.request.data, features, truth, request.reward


# --- environment ----------------------------------------------------------------------------------


def get_request_path() -> dict[str, str]:
    """``{PREDICTIVE_UNIT_ID: PREDICTIVE_UNIT_IMAGE}`` of the unit's environment; {} outside one."""
    unit = os.environ.get("PREDICTIVE_UNIT_ID", NOT_IMPLEMENTED)
    if unit == NOT_IMPLEMENTED:
        return {}
    return {unit: os.environ.get("PREDICTIVE_UNIT_IMAGE", f"{NOT_IMPLEMENTED}:{NOT_IMPLEMENTED}")}


def getenv(*env_vars: str, default: Any = None) -> Any:
    """The value of the first of ``env_vars`` that is set, else ``default``."""
    return next((os.environ[name] for name in env_vars if name in os.environ), default)


def getenv_as_bool(*env_vars: str, default: bool = False) -> bool:
    value = getenv(*env_vars)
    return default if value is None else value.lower() in ("1", "true", "t")


def setup_tracing(interface_name: str) -> Any:
    """Jaeger tracing is not part of inferd (see docs/dialects/seldon.md)."""
    raise SeldonMicroserviceException(
        "setup_tracing is not provided by inferd: Jaeger tracing (--tracing) is not reproduced",
        status_code=500,
        reason="MICROSERVICE_INTERNAL_ERROR",
    )
