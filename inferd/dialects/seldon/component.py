"""One Seldon component: the user object behind every Seldon method, whatever the protocol.

`SeldonModel.call` takes a decoded request (plain JSON values) plus the form raw methods receive (the
same dict on REST, the protobuf message on gRPC) and returns a `Reply` of plain JSON values. The rules
are Seldon 1.18's (spec §3-§5): legacy ``<method>_rest``/``_grpc`` first, then ``<method>_raw``, then
the high-level method with meta passed only when its signature takes it; tags and metrics merged into
``meta``; missing methods answered as Seldon answers them. Over V2 the component is a model with one
input (the features) and one output ``output-0``. It is the protocol's `Component`, which is how the
graph dialect runs it as a node. How it calls the user's methods is `user_calls`'s job, and how it
makes an answer message from what they return is `replies`'s.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from google.protobuf import json_format

from inferd.core.batching import Batcher, BatchSettings, split_rows
from inferd.core.errors import InvalidInput
from inferd.core.model import Model, PredictInThread
from inferd.core.types import Tensors
from inferd.dialects.seldon import flask_errors, metadata, metrics
from inferd.dialects.seldon.replies import Replies, _parse_proto, _puid, as_proto_json, http_status
from inferd.dialects.seldon.unit import Unit
from inferd.dialects.seldon.user_calls import UNSET, _plain, takes_meta
from inferd.dialects.seldon.user_model import is_response
from inferd.protocols.seldon import methods, payload
from inferd.protocols.seldon._generated import prediction_pb2 as pb
from inferd.protocols.seldon.component import Reply
from inferd.protocols.seldon.errors import SeldonError, seldon_exception_fields

logger = logging.getLogger("inferd.seldon")

STUBBED_HEALTH = "not implemented - assuming healthy"
TRANSFORMS = ("transform_input", "transform_output")
#: The Prometheus ``method`` label of predict and the transforms, the methods `_transform` answers.
LABELS = {name: methods.LABELS[name] for name in ("predict", *TRANSFORMS)}
#: The method V2 calls, by service type.
V2_METHODS = {
    "MODEL": "predict",
    "TRANSFORMER": "transform_input",
    "OUTPUT_TRANSFORMER": "transform_output",
    "ROUTER": "route",
    "COMBINER": "aggregate",
}


def environment_flag(name: str, default: str) -> bool:
    return os.environ.get(name, default).strip().lower() == "true"


class SeldonModel(Replies, Model):
    platform: ClassVar[str] = "seldon"

    def __init__(
        self,
        user_class: type,
        parameters: dict[str, Any],
        service_type: str = "MODEL",
        predict_in_thread: PredictInThread = False,
        batching: BatchSettings | None = None,
        unit: tuple[str, str] | None = None,
    ) -> None:
        """``unit`` is (id, image) of the unit in a graph; unset, Seldon's ``PREDICTIVE_UNIT_ID`` and
        ``PREDICTIVE_UNIT_IMAGE`` say it (they key ``meta.requestPath`` and feedback routing)."""
        self.user_class, self.parameters = user_class, parameters
        self.unit = unit
        self.v2_method = V2_METHODS.get(service_type, "predict")
        self.predict_in_thread = predict_in_thread
        self.batching = batching or BatchSettings()

    # --- lifecycle --------------------------------------------------------------------------------

    def load(self) -> None:
        self.user = self.user_class(**self.parameters)
        self._user_methods: dict[str, Callable[..., Any] | None] = {}
        self._passes_decoded: dict[str, bool] = {}
        user_load = getattr(self.user, "load", None)
        if callable(user_load):
            try:
                user_load()
            except (NotImplementedError, AttributeError):
                logger.info("load is not implemented by %s", self.user_class.__name__)
        self.recorder = metrics.recorder()
        self.include_metrics = environment_flag("INCLUDE_METRICS_IN_CLIENT_RESPONSE", "true")
        self.feedback_metrics = os.environ.get("SELDON_EXECUTOR_ENABLED", "true").lower() != "false"
        self.identity = Unit(*self.unit) if self.unit else Unit.from_environment()
        self.unit_id = self.identity.id
        self._meta_rule = {
            name: takes_meta(getattr(self.user, name))
            for name in ("predict", "transform_input", "transform_output", "route")
            if callable(getattr(self.user, name, None))
        }
        try:
            self.metadata_document: dict[str, Any] | SeldonError = metadata.build(
                getattr(self.user, "init_metadata", None)
            )
        except SeldonError as exc:
            self.metadata_document = exc
        self.error_handlers = flask_errors.error_handlers(self.user)
        plain_predict = not any(
            callable(getattr(self.user, f"predict_{kind}", None)) for kind in ("raw", "rest", "grpc")
        )
        self.batcher: Batcher[payload.Decoded, Any] | None = None
        if self.batching.enabled and plain_predict and callable(getattr(self.user, "predict", None)):
            self.batcher = Batcher(self._predict_batch, self.batching, self.name)
        service = getattr(self.user, "custom_service", None)
        if callable(service):
            threading.Thread(target=service, name="seldon-custom-service", daemon=True).start()
        self._methods: dict[str, Callable[[Any, Any, str], Reply]] = {
            **{name: functools.partial(self._transform, name) for name in ("predict", *TRANSFORMS)},
            "route": self._route,
            "aggregate": self._aggregate,
            "send_feedback": self._send_feedback,
        }

    def call(self, method: str, request: Any, native: Any = UNSET, protocol: str = "rest") -> Reply:
        """Answer ``request`` with the Seldon ``method``; ``native`` is what raw methods receive. A
        predict answer carrying ``status.code`` has that HTTP status, whichever method made it."""
        raw_input = request if native is UNSET else native
        legacy = None if method == "send_feedback" else self._legacy(method, protocol)
        if legacy is not None:
            reply = Reply(_plain(legacy[1](raw_input)))
        else:
            reply = self._methods[method](request, raw_input, protocol)
        return Reply(reply.body, http_status(reply.body)) if method == "predict" else reply

    def _legacy(self, method: str, protocol: str) -> tuple[str, Callable[..., Any]] | None:
        """The deprecated ``<method>_rest`` or ``<method>_grpc`` that answers, in seldon-core's order:
        predict's by the protocol of the call, every other method's ``_rest`` first, then ``_grpc``,
        whatever the protocol."""
        for kind in (protocol,) if method == "predict" else ("rest", "grpc"):
            function = self._user_method(f"{method}_{kind}")
            if function is not None:
                logger.warning("%s_%s is deprecated; use %s_raw", method, kind, method)
                return kind, function
        return None

    async def answer(self, method: str, request: Any, native: Any = UNSET, protocol: str = "rest") -> Reply:
        """`call` as every protocol runs it: predict through the batcher when the component opted in,
        else the user code on the loop or in a thread (``predict_in_thread``)."""
        if method == "predict" and self.batcher is not None:
            return await self.predict_message(request)
        return await self.call_user(self.call, method, request, native, protocol)

    async def predict_message(self, request: Any) -> Reply:
        """predict through the batcher (a component that opted in): concurrent ``ndarray`` or
        ``tensor`` messages of the same shape share one ``predict`` call, which sees the stacked
        rows and no meta; each answer gets its own rows, meta and puid back."""
        decoded = payload.decode(request)
        features = decoded.features
        if (
            self.batcher is None
            or decoded.kind not in ("ndarray", "tensor")
            or features.ndim < 1
            or not 0 < len(features) <= self.batching.max_batch_size
        ):
            return self.call("predict", request)
        key = (decoded.kind, features.dtype.str, features.shape[1:], tuple(decoded.names))
        result = await self.batcher.submit(decoded, len(features), key)
        return Reply(self._respond(result, decoded.kind, decoded.meta, _puid(request), methods.PREDICT))

    async def _predict_batch(self, items: list[payload.Decoded]) -> list[Any]:
        stacked = np.concatenate([item.features for item in items]) if len(items) > 1 else items[0].features
        result = await self.call_user(
            self._with_meta, "predict", self.user.predict, stacked, items[0].names, None
        )
        data = result.data if is_response(result) else result
        parts = split_rows(np.asarray(data), [len(item.features) for item in items])
        if not is_response(result):
            return parts
        # Runtime tags go to every answer; runtime metrics are counted once, with the first.
        return [
            type(result)(part, result.tags, result.metrics if i == 0 else []) for i, part in enumerate(parts)
        ]

    def metadata_answer(self) -> dict[str, Any]:
        if isinstance(self.metadata_document, SeldonError):
            raise self.metadata_document
        return self.metadata_document

    def health_status(self) -> Reply:
        found, raw = self._raw("health_status", UNSET, methods.HEALTH)
        if found:
            return Reply(raw)
        result = self._optional("health_status", lambda f: f(), "healthy", stubbed=STUBBED_HEALTH)
        return Reply(self._respond(result, "", None, None, methods.HEALTH))

    def passthrough(self, body: bytes | str) -> Any:
        """PAYLOAD_PASSTHROUGH: the body as it came, to ``predict_raw``, and its return as it is."""
        return self.user.predict_raw(body)

    # --- the Seldon methods -----------------------------------------------------------------------

    def _transform(self, name: str, request: Any, raw_input: Any, protocol: str) -> Reply:
        """predict, transform_input and transform_output: the raw method's answer if it has one,
        else the high-level method's."""
        label = LABELS[name]
        found, raw = self._raw(name, raw_input, label)
        if found:
            return Reply(raw)
        decoded = payload.decode(request)
        result = self._high_level(name, decoded)
        return Reply(self._respond(result, decoded.kind, decoded.meta, _puid(request), label))

    def _high_level(self, name: str, decoded: payload.Decoded) -> Any:
        """The user's transform_input, predict or transform_output of ``decoded``; without one, the
        input itself (an empty answer for predict)."""
        identity = [] if name == "predict" else decoded.features
        return self._optional(
            name, lambda f: self._with_meta(name, f, decoded.features, decoded.names, decoded.meta), identity
        )

    # --- in a graph: decoded messages between local nodes -----------------------------------------

    def passes_decoded(self, name: str) -> bool:
        """Whether ``name`` can take and give `payload.Decoded` messages (`call_decoded`): a
        transform_input, predict or transform_output the class has, with nothing that reads or adds
        to the message itself (no raw or legacy method, no ``tags()`` or ``metrics()``), not batched."""
        passes = self._passes_decoded.get(name)
        if passes is None:
            readers = (f"{name}_raw", f"{name}_rest", f"{name}_grpc", "tags", "metrics")
            passes = self._passes_decoded[name] = (
                name in LABELS
                and self._user_method(name) is not None
                and all(self._user_method(reader) is None for reader in readers)
                and not (name == "predict" and self.batcher is not None)
            )
        return passes

    def call_decoded(self, name: str, request: Any) -> payload.Decoded | dict[str, Any]:
        """`call` of a `passes_decoded` method for the next local node of a graph: ``request`` a
        message or an already decoded one, and the answer left decoded when `payload.passed_on` can
        (the next node would only decode it again), else the message `call` answers."""
        decoded = request if isinstance(request, payload.Decoded) else payload.decode(request)
        result = self._high_level(name, decoded)
        puid = (decoded.meta or {}).get("puid")
        meta = self._meta(decoded.meta, {}, [], puid)
        passed = payload.passed_on(result, decoded.kind, self._class_names, meta)
        if passed is not None:
            return passed
        return self._respond(result, decoded.kind, decoded.meta, puid, LABELS[name])

    def _route(self, request: Any, raw_input: Any, protocol: str) -> Reply:
        """The router's choice: ``route`` sees the request's meta as predict does (seldon-core passes
        it), but the answer carries only this unit's tags, not the request's."""
        found, raw = self._raw("route", raw_input, methods.ROUTE)
        if found:
            return Reply(raw)
        decoded = payload.decode(request)
        missing = SeldonError("Route not defined", not_implemented=True)
        X, names, meta = decoded.features, decoded.names, decoded.meta
        result = self._optional("route", lambda f: self._with_meta("route", f, X, names, meta), missing)
        value = result.data if is_response(result) else result
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise SeldonError(f"Routing response must be int but got {value!r}")
        if value < -2:
            raise SeldonError(f"Routing response {value} is out of range: -2, -1 or a child index")
        routed = np.array([[int(value)]])
        result = type(result)(routed, result.tags, result.metrics) if is_response(result) else routed
        return Reply(self._respond(result, decoded.kind, None, _puid(request), methods.ROUTE))

    def _aggregate(self, request: Any, raw_input: Any, protocol: str) -> Reply:
        found, raw = self._raw("aggregate", raw_input, methods.AGGREGATE)
        if found:
            return Reply(raw)
        messages = request.get("seldonMessages") if isinstance(request, dict) else request
        if not isinstance(messages, list):
            raise SeldonError(f"Invalid request data type: {payload.short(request)}")
        if not messages:
            raise SeldonError("Invalid request data type: no messages to aggregate")
        decoded = [payload.decode(message) for message in messages]
        missing = SeldonError("Aggregate not defined", not_implemented=True)
        features, names = [d.features for d in decoded], [d.names for d in decoded]
        result = self._optional("aggregate", lambda f: f(features, names), missing)
        merged: dict[str, Any] = {"tags": {}, "requestPath": {}, "metrics": []}
        for item in decoded:
            meta = item.meta or {}
            merged["tags"].update(meta.get("tags") or {})
            merged["requestPath"].update(meta.get("requestPath") or {})
            merged["metrics"].extend(meta.get("metrics") or [])
        return Reply(self._respond(result, decoded[0].kind, merged, _puid(messages[0]), methods.AGGREGATE))

    def _send_feedback(self, request: Any, raw_input: Any, protocol: str) -> Reply:
        """Feedback as seldon-core takes it on both protocols: the reward counted first; then a legacy
        ``send_feedback_rest`` (given the Feedback as JSON text) or ``send_feedback_grpc`` (given the
        Feedback message), else ``send_feedback_raw`` (the message), else ``send_feedback``. Every
        answer is a SeldonMessage; a legacy or raw method returning None answers an empty one."""
        feedback = _parse_proto(request, pb.Feedback())
        native = feedback if protocol == "rest" else raw_input
        reward = float(request.get("reward") or 0.0)
        if reward and self.feedback_metrics:
            self.recorder.feedback(reward)
        legacy = self._legacy("send_feedback", protocol)
        if legacy is not None:
            kind, function = legacy
            answer = function(json_format.MessageToJson(native) if kind == "rest" else native)
            return Reply(as_proto_json(_plain(answer) or {}, pb.SeldonMessage()))
        found, raw = self._raw("send_feedback", native, methods.FEEDBACK)
        if found:
            return Reply(as_proto_json(raw or {}, pb.SeldonMessage()))
        sent = request.get("request") or {}
        kind, features = payload.datadef_to_array(sent.get("data") or {})
        truth = payload.datadef_to_array((request.get("truth") or {}).get("data") or {})[1]
        routing = ((request.get("response") or {}).get("meta") or {}).get("routing") or {}
        names = (sent.get("data") or {}).get("names") or []
        result = self._optional(
            "send_feedback",
            lambda f: f(features, names, reward, truth, routing=routing.get(self.identity.routing_key)),
            None,
        )
        value = result.data if is_response(result) else result
        if value is None or not isinstance(value, (dict, str, bytes, list, np.ndarray)):
            value = np.array([] if value is None else value)
        if is_response(result):
            value = type(result)(value, result.tags, result.metrics)
        body = self._respond(value, kind if "data" in sent else "", None, _puid(sent), methods.FEEDBACK)
        return Reply(as_proto_json(body, pb.SeldonMessage()))

    # --- V2 ---------------------------------------------------------------------------------------

    def predict(self, inputs: Tensors) -> Tensors:
        """V2: the one input tensor (or the first) goes in as an ``ndarray`` message to the method of the
        service type; the answer's data (or its str, bytes or JSON payload) is ``output-0``."""
        message = {"data": {"ndarray": next(iter(inputs.values()))}}
        request = [message] if self.v2_method == "aggregate" else message
        try:
            body = self.call(self.v2_method, request).body
        except Exception as exc:
            fields = seldon_exception_fields(exc) or (
                (exc.status, exc.info, exc.reason) if isinstance(exc, SeldonError) else None
            )
            if fields is not None and fields[0] < 500:
                raise InvalidInput(fields[1]) from exc
            raise
        return {payload.OUTPUT: payload.as_output(body)}
