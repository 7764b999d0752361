"""``seldon_core.seldon_client`` without seldon-core: `SeldonClient` over plain HTTP (httpx) and
insecure gRPC, with the protocol's generated stubs (`inferd.protocols.seldon`) and the `utils`
stand-in's message helpers.

What it covers, as seldon-core 1.18 does it:

- ``microservice(method=...)`` and ``microservice_feedback``: a component's own API, REST (the
  message in the form field ``json`` to ``/predict``, ``/route``, ``/aggregate``, ...) or gRPC
  (``Model.Predict``, ``Generic.Route``, ...), answers always as protobuf messages;
- ``predict`` and ``feedback`` through a gateway: ``gateway="seldon"`` posts to
  ``/api/v1.0/predictions`` and ``/api/v1.0/feedback`` of ``gateway_endpoint`` (an inferd component
  or graph) or calls the ``Seldon`` gRPC service; ``"ambassador"`` and ``"istio"`` build Seldon's
  ingress paths (``/seldon/<namespace>/<deployment>/...``, ``gateway_prefix``, ``http_path``) and gRPC
  metadata (``seldon``, ``namespace``, ``headers``);
- results as `SeldonClientPrediction` / `SeldonClientFeedback` / `SeldonClientCombine` with
  ``success`` and ``msg``; a failed call is a result, not an exception.

Not provided, with a `SeldonClientException` saying so: TLS (``channel_credentials``, or a token
without ``ssl=False``, which seldon-core sends over https) and ``explain``. Unlike seldon-core, a
server that cannot be reached over REST is a `SeldonClientException` rather than the HTTP library's
own error.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from typing import Any

import grpc
import httpx
import numpy as np
import orjson
from google.protobuf.message import Message

from inferd.dialects.seldon.stand_in import utils
from inferd.protocols.seldon._generated import prediction_pb2, prediction_pb2_grpc

logger = logging.getLogger("inferd.seldon.client")

GATEWAYS = ("ambassador", "istio", "seldon")
TRANSPORTS = ("rest", "grpc")
METHODS = ("predict", "route", "aggregate", "transform-input", "transform-output", "send-feedback", None)
RETURN_TYPES = ("proto", "dict")
MESSAGE_LIMIT = 4 * 1024 * 1024
#: A component's gRPC (service, method) for each microservice method.
MICROSERVICE_GRPC = {
    "predict": ("Model", "Predict"),
    "transform-input": ("Generic", "TransformInput"),
    "transform-output": ("Generic", "TransformOutput"),
    "route": ("Generic", "Route"),
    "aggregate": ("Generic", "Aggregate"),
    "send-feedback": ("Generic", "SendFeedback"),
}
#: The external API's REST path and ``Seldon`` gRPC method of each gateway call.
GATEWAY_CALLS = {
    "predict": ("/api/v1.0/predictions", "Predict"),
    "feedback": ("/api/v1.0/feedback", "SendFeedback"),
}


class SeldonClientException(Exception):
    """A call the client cannot make: a bad argument or something inferd does not provide."""

    status_code = 400

    def __init__(self, message: str) -> None:
        Exception.__init__(self)
        self.message = message

    def __str__(self) -> str:
        return self.message


class SeldonChannelCredentials:
    """TLS settings; kept for signature compatibility, a call using them is refused (no TLS here)."""

    def __init__(
        self,
        verify: bool = True,
        root_certificates_file: str | None = None,
        private_key_file: str | None = None,
        certificate_chain_file: str | None = None,
    ) -> None:
        self.verify = verify
        self.root_certificates_file = root_certificates_file
        self.private_key_file = private_key_file
        self.certificate_chain_file = certificate_chain_file


class SeldonCallCredentials:
    """A token sent as ``X-Auth-Token`` (REST) or ``x-auth-token`` metadata (gRPC)."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token


class _Result:
    def __init__(self, request: Any, response: Any, success: bool = True, msg: str = "") -> None:
        self.request, self.response, self.success, self.msg = request, response, success, msg

    def __repr__(self) -> str:
        return (
            f"Success:{self.success} message:{self.msg}\nRequest:\n{self.request}\nResponse:\n{self.response}"
        )


class SeldonClientPrediction(_Result):
    """The request sent, the response (None when there is none) and whether the call succeeded."""


class SeldonClientFeedback(_Result):
    """The ``Feedback`` sent, the response and whether the call succeeded."""


class SeldonClientCombine(_Result):
    """The ``SeldonMessageList`` sent to ``aggregate``, the response and whether it succeeded."""


class SeldonClient:
    """A client of Seldon components and deployments; every keyword of the constructor can be given
    again to each call, where it wins."""

    def __init__(
        self,
        gateway: str = "ambassador",
        transport: str = "rest",
        namespace: str | None = None,
        deployment_name: str | None = None,
        payload_type: str = "tensor",
        gateway_endpoint: str = "localhost:8003",
        microservice_endpoint: str = "localhost:5000",
        grpc_max_send_message_length: int = MESSAGE_LIMIT,
        grpc_max_receive_message_length: int = MESSAGE_LIMIT,
        channel_credentials: SeldonChannelCredentials | None = None,
        call_credentials: SeldonCallCredentials | None = None,
        debug: bool = False,
        client_return_type: str = "dict",
        ssl: bool | None = None,
    ) -> None:
        if debug:
            logger.setLevel(logging.DEBUG)
        self.config: dict[str, Any] = {
            "gateway": gateway,
            "transport": transport,
            "namespace": namespace,
            "deployment_name": deployment_name,
            "payload_type": payload_type,
            "gateway_endpoint": gateway_endpoint,
            "microservice_endpoint": microservice_endpoint,
            "grpc_max_send_message_length": grpc_max_send_message_length,
            "grpc_max_receive_message_length": grpc_max_receive_message_length,
            "channel_credentials": channel_credentials,
            "call_credentials": call_credentials,
            "debug": debug,
            "client_return_type": client_return_type,
            "ssl": ssl,
        }

    def _arguments(self, **given: Any) -> dict[str, Any]:
        """The configuration with the call's non-None keywords on top, checked."""
        k = {**self.config, **{key: value for key, value in given.items() if value is not None}}
        _check(k, "gateway", GATEWAYS)
        _check(k, "transport", TRANSPORTS)
        _check(k, "method", METHODS)
        _check(k, "client_return_type", RETURN_TYPES)
        if not (k.get("data") is None or isinstance(k["data"], np.ndarray)):
            raise SeldonClientException("Valid values for data are None or numpy array")
        return k

    def predict(
        self,
        gateway: str | None = None,
        transport: str | None = None,
        deployment_name: str | None = None,
        payload_type: str | None = None,
        gateway_endpoint: str | None = None,
        microservice_endpoint: str | None = None,
        method: str | None = None,
        shape: tuple[int, ...] = (1, 1),
        namespace: str | None = None,
        data: np.ndarray | None = None,
        bin_data: bytes | bytearray | None = None,
        str_data: str | None = None,
        json_data: Any = None,
        custom_data: Any = None,
        names: Iterable[str] | None = None,
        gateway_prefix: str | None = None,
        headers: dict[str, str] | None = None,
        http_path: str | None = None,
        meta: dict[str, Any] | None = None,
        client_return_type: str | None = None,
        raw_data: Any = None,
        ssl: bool | None = None,
    ) -> SeldonClientPrediction:
        """A prediction through the gateway (``gateway_endpoint``); ``meta`` becomes the request's tags."""
        k = self._arguments(**{key: value for key, value in locals().items() if key != "self"})
        raw = k.get("raw_data")
        if isinstance(raw, Message):
            request = raw
        elif raw:
            request = utils.json_to_seldon_message(raw)
        else:
            # seldon-core sends the (maybe empty) meta everywhere but to the Seldon gRPC service
            seldon_grpc = k["gateway"] == "seldon" and k["transport"] == "grpc"
            request = _message(k, meta=None if seldon_grpc else k.get("meta") or {})
        document = raw if isinstance(raw, dict) and raw else utils.seldon_message_to_json(request)
        return SeldonClientPrediction(*self._gateway_call(k, "predict", request, document))

    def feedback(
        self,
        prediction_request: Any = None,
        prediction_response: Any = None,
        prediction_truth: Any = None,
        reward: float = 0,
        gateway: str | None = None,
        transport: str | None = None,
        deployment_name: str | None = None,
        payload_type: str | None = None,
        gateway_endpoint: str | None = None,
        microservice_endpoint: str | None = None,
        method: str | None = None,
        shape: tuple[int, ...] = (1, 1),
        namespace: str | None = None,
        gateway_prefix: str | None = None,
        client_return_type: str | None = None,
        raw_request: Any = None,
        ssl: bool | None = None,
    ) -> SeldonClientFeedback:
        """Feedback on an earlier prediction through the gateway (``gateway_endpoint``)."""
        k = self._arguments(
            gateway=gateway,
            transport=transport,
            deployment_name=deployment_name,
            gateway_endpoint=gateway_endpoint,
            method=method,
            namespace=namespace,
            gateway_prefix=gateway_prefix,
            client_return_type=client_return_type,
            ssl=ssl,
        )
        if isinstance(raw_request, Message):
            request = raw_request
        elif raw_request:
            request = utils.json_to_feedback(raw_request)
        else:
            request = _feedback(prediction_request, prediction_response, reward, prediction_truth)
        document = (
            raw_request if isinstance(raw_request, dict) and raw_request else utils.feedback_to_json(request)
        )
        return SeldonClientFeedback(*self._gateway_call(k, "feedback", request, document))

    def explain(self, *args: Any, **kwargs: Any) -> Any:
        raise SeldonClientException("explain is not provided by inferd: it serves no explainers")

    def microservice(
        self,
        gateway: str | None = None,
        transport: str | None = None,
        deployment_name: str | None = None,
        payload_type: str | None = None,
        gateway_endpoint: str | None = None,
        microservice_endpoint: str | None = None,
        method: str | None = None,
        shape: tuple[int, ...] = (1, 1),
        namespace: str | None = None,
        data: np.ndarray | None = None,
        datas: list[Any] | None = None,
        ndatas: int | None = None,
        bin_data: bytes | bytearray | None = None,
        str_data: str | None = None,
        json_data: Any = None,
        custom_data: Any = None,
        names: Iterable[str] | None = None,
    ) -> SeldonClientPrediction | SeldonClientCombine:
        """A call of one component's ``method`` at ``microservice_endpoint`` (its HTTP port for
        REST, its gRPC port for gRPC); ``aggregate`` sends ``datas`` (or ``ndatas`` random arrays)."""
        k = self._arguments(**{key: value for key, value in locals().items() if key != "self"})
        method = k.get("method") or "predict"
        if method == "send-feedback":
            raise SeldonClientException("use microservice_feedback to send feedback")
        if method == "aggregate":
            messages = [_part(item, k) for item in _datas(k)]
            request: Any = prediction_pb2.SeldonMessageList(seldonMessages=messages)
            return SeldonClientCombine(*self._microservice_call(k, method, request))
        return SeldonClientPrediction(*self._microservice_call(k, method, _message(k)))

    def microservice_feedback(
        self,
        prediction_request: Any = None,
        prediction_response: Any = None,
        reward: float = 0,
        gateway: str | None = None,
        transport: str | None = None,
        deployment_name: str | None = None,
        payload_type: str | None = None,
        gateway_endpoint: str | None = None,
        microservice_endpoint: str | None = None,
        method: str | None = None,
        shape: tuple[int, ...] = (1, 1),
        namespace: str | None = None,
    ) -> SeldonClientFeedback:
        """Feedback to one component's ``send-feedback`` at ``microservice_endpoint``."""
        k = self._arguments(transport=transport, microservice_endpoint=microservice_endpoint, method=method)
        request = _feedback(prediction_request, prediction_response, reward, None)
        return SeldonClientFeedback(*self._microservice_call(k, "send-feedback", request))

    # --- transports -------------------------------------------------------------------------------

    def _microservice_call(
        self, k: dict[str, Any], method: str, request: Message
    ) -> tuple[Any, Any, bool, str]:
        endpoint = k["microservice_endpoint"]
        if k["transport"] == "grpc":
            service, rpc = MICROSERVICE_GRPC[method]
            return _grpc(k, endpoint, service, rpc, request, [], "proto")
        form = {"json": orjson.dumps(utils.seldon_message_to_json(request)).decode()}
        response = _post(f"http://{endpoint}/{method}", data=form)
        success = response.status_code == 200
        try:
            return (
                request,
                utils.json_to_seldon_message(response.json()),
                success,
                "" if success else response.reason_phrase,
            )
        except Exception as exc:  # an answer that is not a SeldonMessage is a result, as in seldon-core
            return request, None, success, str(exc)

    def _gateway_call(
        self, k: dict[str, Any], call: str, request: Message, document: Any
    ) -> tuple[Any, Any, bool, str]:
        path, rpc = GATEWAY_CALLS[call]
        credentials = k.get("call_credentials")
        token = credentials.token if credentials is not None else None
        if k["transport"] == "grpc":
            if k.get("channel_credentials") is not None:
                raise SeldonClientException(
                    "TLS (channel_credentials) is not provided by inferd's SeldonClient"
                )
            metadata = _gateway_metadata(k)
            if token is not None:
                metadata.append(("x-auth-token", token))
            return _grpc(k, k["gateway_endpoint"], "Seldon", rpc, request, metadata, k["client_return_type"])
        if k.get("channel_credentials") is not None or (
            credentials is not None and k.get("ssl") is not False
        ):
            raise SeldonClientException(
                "TLS is not provided by inferd's SeldonClient "
                "(seldon-core sends a token over https unless ssl=False)"
            )
        headers = dict(k.get("headers") or {}) if k["gateway"] != "seldon" else {}
        if token is not None:
            headers["X-Auth-Token"] = token
        response = _post(_gateway_url(k, path), json=document, headers=headers)
        success = response.status_code == 200
        message = "" if success else f"{response.status_code}:{response.reason_phrase}"
        return request, _returned(response, k["client_return_type"]), success, message


def _check(k: dict[str, Any], name: str, allowed: tuple[Any, ...]) -> None:
    if k.get(name) not in allowed:
        shown = ", ".join(repr(value) for value in allowed if value is not None)
        raise SeldonClientException(f"Valid values for {name} are {shown}, got {k.get(name)!r}")


def _message(k: dict[str, Any], meta: dict[str, Any] | None = None) -> Any:
    """The ``SeldonMessage`` of the call's payload: ``bin_data``, ``str_data``, ``json_data``,
    ``custom_data`` or ``data`` (random values of ``shape`` when none is given), in that order."""
    message = prediction_pb2.SeldonMessage()
    if meta is not None:
        message.meta.CopyFrom(utils.json_to_seldon_message({"meta": {"tags": meta}}).meta)
    if k.get("bin_data") is not None:
        message.binData = bytes(k["bin_data"])
    elif k.get("str_data") is not None:
        message.strData = k["str_data"]
    elif k.get("json_data") is not None:
        message.jsonData.CopyFrom(utils.json_to_seldon_message({"jsonData": k["json_data"]}).jsonData)
    elif k.get("custom_data") is not None:
        message.customData.CopyFrom(k["custom_data"])
    else:
        data = k.get("data")
        array = np.random.rand(*k.get("shape", (1, 1))) if data is None else data
        message.data.CopyFrom(utils.array_to_grpc_datadef(k["payload_type"], array, k.get("names")))
    return message


def _datas(k: dict[str, Any]) -> list[Any]:
    if k.get("datas") is not None:
        return list(k["datas"])
    if k.get("ndatas") is None:
        raise SeldonClientException("aggregate needs datas (a list of payloads) or ndatas")
    return [np.random.rand(*k.get("shape", (1, 1))) for _ in range(k["ndatas"])]


def _part(item: Any, k: dict[str, Any]) -> Any:
    """One message of an aggregate request: bytes, a str, a protobuf ``Any`` or an array."""
    if isinstance(item, (bytes, bytearray)):
        return _message({"bin_data": item})
    if isinstance(item, str):
        return _message({"str_data": item})
    if isinstance(item, Message):
        return _message({"custom_data": item})
    return _message({**k, "data": np.asarray(item)})


def _feedback(request: Any, response: Any, reward: float, truth: Any) -> Any:
    """A ``Feedback``; its messages may be given as protobuf or as JSON (as a dict client returns them)."""
    parts = {"request": request, "response": response, "truth": truth}
    messages = {
        name: utils.json_to_seldon_message(value) if isinstance(value, dict) else value
        for name, value in parts.items()
        if value is not None
    }
    return prediction_pb2.Feedback(reward=reward, **messages)


def _gateway_url(k: dict[str, Any], path: str) -> str:
    base = f"http://{k['gateway_endpoint']}"
    if k["gateway"] == "seldon":
        return base + path
    if path == GATEWAY_CALLS["predict"][0] and k.get("http_path") is not None:
        return f"{base}{_deployment_path(k)}{k['http_path']}"
    if k.get("gateway_prefix") is not None:
        return f"{base}{k['gateway_prefix']}{path}"
    return f"{base}{_deployment_path(k)}{path}"


def _deployment_path(k: dict[str, Any]) -> str:
    if not k.get("deployment_name"):
        raise SeldonClientException(f"gateway {k['gateway']!r} needs a deployment_name")
    namespace = k.get("namespace")
    return f"/seldon/{namespace}/{k['deployment_name']}" if namespace else f"/seldon/{k['deployment_name']}"


def _gateway_metadata(k: dict[str, Any]) -> list[tuple[str, str]]:
    """The gRPC metadata an ingress routes by (none for ``gateway="seldon"``)."""
    if k["gateway"] == "seldon":
        return []
    metadata = [("seldon", k.get("deployment_name") or "")]
    if k.get("namespace"):
        metadata.append(("namespace", k["namespace"]))
    metadata.extend((str(key).lower(), str(value)) for key, value in (k.get("headers") or {}).items())
    return metadata


@functools.cache
def _http() -> httpx.Client:
    """One pooled client for every call: plain HTTP only, so no TLS context (building one per call,
    as ``httpx.post`` does, costs tens of milliseconds); no timeout, as requests has none."""
    return httpx.Client(timeout=None, verify=False)


def _post(url: str, **kwargs: Any) -> httpx.Response:
    logger.debug("POST %s", url)
    try:
        return _http().post(url, **kwargs)
    except httpx.TransportError as exc:
        raise SeldonClientException(f"cannot reach {url}: {exc}") from exc


def _returned(response: httpx.Response, return_type: str) -> Any:
    """The answer as ``return_type`` asks; None when it is empty or not a message."""
    if not response.content:
        return None
    try:
        document = response.json()
        return utils.json_to_seldon_message(document) if return_type == "proto" else document
    except Exception:  # seldon-core gives None for an answer it cannot read
        return None


def _grpc(
    k: dict[str, Any],
    endpoint: str,
    service: str,
    rpc: str,
    request: Message,
    metadata: list[tuple[str, str]],
    return_type: str,
) -> tuple[Any, Any, bool, str]:
    options = [
        ("grpc.max_send_message_length", k["grpc_max_send_message_length"]),
        ("grpc.max_receive_message_length", k["grpc_max_receive_message_length"]),
    ]
    with grpc.insecure_channel(endpoint, options=options) as channel:
        stub = getattr(prediction_pb2_grpc, f"{service}Stub")(channel)
        try:
            response = getattr(stub, rpc)(request, metadata=metadata or None)
        except Exception as exc:  # a failed call is a result with its message, as in seldon-core
            return request, None, False, str(exc)
    if return_type == "dict":
        return utils.seldon_message_to_json(request), utils.seldon_message_to_json(response), True, ""
    return request, response, True, ""
