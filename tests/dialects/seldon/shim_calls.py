"""User code calling seldon-core's helpers, run once against seldon-core 1.18 and once against
inferd's stand-ins; it prints what every call gave as JSON, so a test can compare the two.

seldon-core's generated code predates protobuf 4; loaded by protobuf 6's pure-Python implementation
(the only way it loads here) its map fields (``meta.tags``, ``requestPath``, ``routing``) do not
work, so messages built here carry none: tags are compared through the JSON helpers only.

``python shim_calls.py inferd|seldon-core [HTTP_ADDRESS GRPC_ADDRESS]``: with addresses, it also
drives `SeldonClient` against that running component.
"""

from __future__ import annotations

import json
import sys
from typing import Any

if sys.argv[1] == "inferd":
    from inferd.dialects.seldon.stand_in import install_aliases

    install_aliases()
else:
    sys.modules["tensorflow"] = None  # type: ignore[assignment]  # seldon-core then skips TensorFlow

import numpy as np
from google.protobuf import json_format
from google.protobuf.message import Message
from seldon_core import metrics, utils
from seldon_core.proto import prediction_pb2
from seldon_core.seldon_client import SeldonClient


class Component:
    def tags(self) -> dict[str, Any]:
        return {"mine": "yes"}

    def class_names(self) -> list[str]:
        return ["a", "b"]


class Named:
    def class_names(self) -> list[str]:
        return ["a", "b"]


class Features:
    def feature_names(self) -> list[str]:
        return ["f1", "f2"]


def plain(value: Any) -> Any:
    """A JSON form that keeps what equality would see: tuples, dtypes, bytes, messages as bytes."""
    if isinstance(value, Message):
        return {"proto": type(value).__name__, "bytes": value.SerializeToString(deterministic=True).hex()}
    if isinstance(value, np.ndarray):
        return {"array": value.dtype.str, "values": value.tolist()}
    if isinstance(value, tuple):
        return {"tuple": [plain(item) for item in value]}
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, bytes):
        return {"bytes": value.hex()}
    return value


def outcome(function: Any, *args: Any) -> Any:
    """``plain(function(*args))``, or what it raised."""
    try:
        return plain(function(*args))
    except Exception as exc:
        return {"raised": type(exc).__name__, "status_code": getattr(exc, "status_code", None)}


REQUESTS = {
    "ndarray": {"data": {"names": ["a", "b"], "ndarray": [[1, 2], [3, 4]]}, "meta": {"puid": "p1"}},
    "tensor": {"data": {"tensor": {"shape": [2, 2], "values": [1, 2, 3, 4]}}},
    "str": {"strData": "hello"},
    "bin": {"binData": "aGVsbG8="},
    "json": {"jsonData": {"k": [1, "v"]}},
    "empty-data": {"data": {"names": ["z"]}},
}
RESULTS = {
    "ints": np.array([[1, 2], [3, 4]]),
    "floats-1d": np.array([0.5, 1.5]),
    "list": [[1, 2], [3, 4]],
    "strings": np.array([["x", "y"]]),
    "bools": np.array([[True, False]]),
    "dict": {"answer": 42},
    "bytes": b"\x00\x01",
    "text": "done",
}
METRICS = [{"key": "m", "type": "GAUGE", "value": 1}]
META = {"tags": {"from": "meta"}, "metrics": METRICS, "requestPath": {"u": "i"}}


def utils_calls() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, request in REQUESTS.items():
        message = utils.json_to_seldon_message(request)
        out[f"message/{name}"] = plain(message)
        out[f"to-json/{name}"] = utils.seldon_message_to_json(message)
        out[f"data/{name}"] = outcome(utils.get_data_from_proto, message)
        out[f"meta/{name}"] = utils.get_meta_from_proto(message)
        out[f"parts-json/{name}"] = outcome(utils.extract_request_parts_json, request)
        out[f"parts/{name}"] = outcome(utils.extract_request_parts, message)
        for result_name, result in RESULTS.items():
            for user, is_request in ((Component(), False), (Features(), True)):
                key = f"{name}/{result_name}/{type(user).__name__}"
                meta = json.loads(json.dumps(META))
                out[f"response-json/{key}"] = outcome(
                    utils.construct_response_json, user, is_request, request, result, meta, [], {"rt": 1}
                )
            for user, is_request in ((Named(), False), (Features(), True)):
                key = f"{name}/{result_name}/{type(user).__name__}"
                meta = {"metrics": list(METRICS)}
                out[f"response/{key}"] = outcome(
                    utils.construct_response, user, is_request, message, result, meta, METRICS
                )
    for kind in ("tensor", "ndarray", "other"):
        for array in (np.array([[1, 2], [3, 4]]), np.array([1.5, 2.5]), np.array([["a", "b"]])):
            key = f"{kind}/{array.dtype}"
            out[f"rest-datadef/{key}"] = outcome(utils.array_to_rest_datadef, kind, array, ["c1"])
            try:
                datadef = utils.array_to_grpc_datadef(kind, array, ["c1", "c2"])
            except Exception as exc:
                out[f"datadef/{key}"] = type(exc).__name__
                continue
            out[f"datadef/{key}"] = plain(datadef)
            out[f"datadef-back/{key}"] = plain(utils.grpc_datadef_to_array(datadef))
    out["list-value"] = plain(utils.array_to_list_value(np.array([[1, 2], [3, 4]])))
    feedback = {
        "request": REQUESTS["ndarray"],
        "response": {"data": {"ndarray": [[0.1]]}},
        "truth": {"data": {"tensor": {"shape": [1, 1], "values": [1]}}},
        "reward": 0.5,
    }
    proto = utils.json_to_feedback(feedback)
    out["feedback"] = plain(proto)
    out["feedback-json"] = utils.feedback_to_json(proto)
    out["feedback-parts"] = plain(utils.extract_feedback_request_parts(proto))
    messages = utils.json_to_seldon_messages({"seldonMessages": [REQUESTS["str"], REQUESTS["json"]]})
    out["messages"] = utils.seldon_messages_to_json(messages)
    out["metadata"] = plain(utils.json_to_seldon_model_metadata({"name": "m", "versions": ["1"], "extra": 1}))
    out["bad-json"] = outcome(utils.json_to_seldon_message, {"nope": 1})
    out["bad-feedback"] = outcome(utils.json_to_feedback, {"reward": "x"})
    out["unknown-payload"] = outcome(utils.construct_response_json, Component(), False, {}, 3.5)
    out["no-data"] = outcome(utils.get_data_from_proto, prediction_pb2.SeldonMessage())
    out["getenv"] = [
        utils.getenv("NOT_SET_HERE", "SHIM_FLAG", default="d"),
        utils.getenv("NOT_SET_HERE", default="d"),
    ]
    out["getenv-bool"] = [
        utils.getenv_as_bool("SHIM_FLAG"),
        utils.getenv_as_bool("NOT_SET_HERE", default=True),
    ]
    out["request-path"] = utils.get_request_path()
    return out


def metrics_calls() -> dict[str, Any]:
    made = [metrics.create_counter("c", 1), metrics.create_gauge("g", 2.5), metrics.create_timer("t", 3)]
    bad = [[{"key": "k", "type": "HISTOGRAM", "value": 1}], [{"key": "k", "value": 1}], {"not": "a list"}]
    return {
        "types": [metrics.COUNTER, metrics.GAUGE, metrics.TIMER],
        "keys": [metrics.FEEDBACK_KEY, metrics.FEEDBACK_REWARD_KEY],
        "made": made,
        "valid": metrics.validate_metrics(made),
        "invalid": [metrics.validate_metrics(item) for item in bad],
        "not-a-number": outcome(metrics.create_counter, "c", "x"),
        "image-tag": plain(metrics.split_image_tag("seldonio/sklearn-iris:0.1")),
        "method-tags": [metrics.PREDICT_METRIC_METHOD_TAG, metrics.ROUTER_METRIC_METHOD_TAG],
        "default-labels": metrics.DEFAULT_LABELS,
        "bins": [len(metrics.BINS), metrics.BINS[0], round(metrics.BINS[1], 6), round(metrics.BINS[-2], 6)],
    }


def result(prediction: Any) -> dict[str, Any]:
    """A client result as JSON: the response (a message or a dict) and the flags."""
    response = prediction.response
    if isinstance(response, Message):
        response = json_format.MessageToDict(response)
    request = prediction.request
    return {
        "success": prediction.success,
        "msg": prediction.msg if prediction.success else bool(prediction.msg),
        "request": json_format.MessageToDict(request) if isinstance(request, Message) else request,
        "response": response,
    }


def client_calls(http: str, grpc_address: str) -> dict[str, Any]:
    data = np.array([[1.0, 2.0]])
    out: dict[str, Any] = {}
    for transport, endpoint in (("rest", http), ("grpc", grpc_address)):
        client = SeldonClient(gateway="seldon", transport=transport, gateway_endpoint=endpoint)
        micro = SeldonClient(transport=transport, microservice_endpoint=endpoint)
        for payload_type in ("ndarray", "tensor"):
            out[f"{transport}/micro/{payload_type}"] = result(
                micro.microservice(method="predict", data=data, payload_type=payload_type, names=["a", "b"])
            )
        out[f"{transport}/micro/str"] = result(micro.microservice(method="predict", str_data="x"))
        out[f"{transport}/micro/aggregate"] = {
            k: v
            for k, v in result(micro.microservice(method="aggregate", datas=[data, data])).items()
            if k != "response"
        }
        out[f"{transport}/micro/feedback"] = result(
            micro.microservice_feedback(utils.json_to_seldon_message(REQUESTS["ndarray"]), None, reward=2.0)
        )
        for return_type in ("dict", "proto"):
            prediction = client.predict(data=data, payload_type="ndarray", client_return_type=return_type)
            out[f"{transport}/gateway/{return_type}"] = result(prediction)
        prediction = client.predict(data=data, client_return_type="proto")
        feedback = client.feedback(
            prediction.request, prediction.response, reward=1.0, client_return_type="proto"
        )
        out[f"{transport}/gateway/feedback"] = result(feedback)
    return out


def main() -> None:
    out = {"utils": utils_calls(), "metrics": metrics_calls()}
    if len(sys.argv) > 2:
        out["client"] = client_calls(sys.argv[2], sys.argv[3])
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
