"""How a Seldon component's answer message is made from what the user code returned: the payload,
and the meta (tags, metrics and request path merged with the request's, the ``tags()`` and
``metrics()`` of the class counted); with the HTTP status of a predict answer and the protobuf
round trip of messages checked against Seldon's schema.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from inferd.dialects.seldon import metrics
from inferd.dialects.seldon.unit import Unit
from inferd.dialects.seldon.user_calls import UserCalls
from inferd.dialects.seldon.user_model import is_response
from inferd.protocols.seldon import payload
from inferd.protocols.seldon.errors import SeldonError, is_not_implemented

#: What `_record_metrics` gets from a class without ``metrics()``: nothing to validate.
NO_METRICS: tuple[dict[str, Any], ...] = ()


class Replies(UserCalls):
    """The answer messages of `SeldonModel` (whose ``load`` sets ``identity``)."""

    identity: Unit

    def _respond(
        self, result: Any, kind: str, request_meta: dict[str, Any] | None, puid: Any, label: str
    ) -> dict[str, Any]:
        """The response message: payload from ``result``, meta from the request, ``tags()``,
        ``metrics()`` and the runtime tags and metrics of a `SeldonResponse`."""
        runtime_tags: dict[str, Any] = {}
        runtime_metrics: list[dict[str, Any]] = []
        if is_response(result):
            result, runtime_tags, runtime_metrics = result.data, result.tags or {}, result.metrics or []
        custom = self._record_metrics(label, runtime_metrics)
        body = payload.encode(result, kind, self._class_names)
        tags = {**(self._optional("tags", _called, {}) or {}), **runtime_tags}
        body["meta"] = self._meta(request_meta, tags, custom if self.include_metrics else [], puid)
        return body

    def _meta(
        self, request_meta: dict[str, Any] | None, tags: dict[str, Any], metrics: list[Any], puid: Any
    ) -> dict[str, Any]:
        """An answer's meta: the request's tags, metrics and path, with this unit's added (the
        request's entries win, as seldon-core merges them)."""
        meta: dict[str, Any] = {}
        request_meta = request_meta or {}
        tags = {**(request_meta.get("tags") or {}), **tags}
        if tags:
            meta["tags"] = tags
        metrics_out = [*(request_meta.get("metrics") or []), *metrics]
        if metrics_out:
            meta["metrics"] = metrics_out
        if puid:
            meta["puid"] = puid
        path = {**self.identity.request_path(), **(request_meta.get("requestPath") or {})}
        if path:
            meta["requestPath"] = path
        return meta

    def _record_metrics(self, label: str, runtime: list[dict[str, Any]]) -> list[dict[str, Any]]:
        found = self._optional("metrics", _called, NO_METRICS)
        custom = [] if found is NO_METRICS else metrics.validate(found)
        if runtime:
            custom = [*custom, *metrics.validate(runtime)]
        if custom:
            self.recorder.record(custom, label)
        return custom

    def _class_names(self) -> list[str] | None:
        names = getattr(self.user, "class_names", None)
        if names is None:
            return None
        if callable(names):
            try:
                return list(names())
            except Exception as exc:
                if is_not_implemented(exc):
                    return None
                raise
        return list(names)


def http_status(answer: Any) -> int:
    """The HTTP status of a predict answer: its ``status.code`` when it has one (seldon-core sets it
    on every ``/predict`` answer, raw, legacy or passed through), else 200."""
    status = answer.get("status") if isinstance(answer, dict) else None
    code = status.get("code") if isinstance(status, dict) else None
    if isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599:
        return code
    return 200


def as_proto_json(document: Any, message: Message) -> dict[str, Any]:
    """``document`` as it comes back from protobuf: numbers become doubles, empty fields vanish."""
    return json_format.MessageToDict(_parse_proto(document, message))  # type: ignore[no-any-return]


def _parse_proto(document: Any, message: Message) -> Message:
    try:
        return json_format.ParseDict(document, message)
    except (json_format.ParseError, TypeError, AttributeError, ValueError) as exc:
        raise SeldonError(f"Invalid JSON: {exc}") from None


def _puid(message: Any) -> Any:
    meta = message.get("meta") if isinstance(message, dict) else None
    return meta.get("puid") if isinstance(meta, dict) else None


def _called(function: Callable[[], Any]) -> Any:
    return function()
