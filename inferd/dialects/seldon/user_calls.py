"""How a Seldon component calls the user object's methods: each looked up once per name, a raw
method first (its ``meta.metrics`` recorded), a missing or `SeldonComponent`-stub method answered
as Seldon answers it, ``meta`` passed only when the signature takes it, and protobuf messages the
user code returns read as JSON values.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from inferd.dialects.seldon import metrics
from inferd.protocols.seldon.errors import SeldonError, is_not_implemented

UNSET = object()


def takes_meta(function: Callable[..., Any]) -> bool | None:
    """Whether ``function`` accepts ``meta=``; None when its signature cannot be read."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    return any(p.name == "meta" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


class UserCalls:
    """The calls of the user object's methods, for `SeldonModel` (whose ``load`` sets these)."""

    user: Any
    _user_methods: dict[str, Callable[..., Any] | None]
    _meta_rule: dict[str, bool | None]
    recorder: metrics.CustomMetrics
    include_metrics: bool

    def _raw(self, name: str, raw_input: Any, label: str) -> tuple[bool, Any]:
        """(True, answer) when the user class has a raw method that answered; its ``meta.metrics`` are
        recorded, and dropped from the answer when metrics are not included in client responses."""
        function = self._user_method(f"{name}_raw")
        if function is None:
            return False, None
        try:
            result = _plain(function() if raw_input is UNSET else function(raw_input))
        except Exception as exc:
            if is_not_implemented(exc):
                return False, None
            raise
        if isinstance(result, dict) and isinstance(result.get("meta"), dict) and "metrics" in result["meta"]:
            self.recorder.record(metrics.validate(result["meta"]["metrics"]), label)
            if not self.include_metrics:
                result = {**result, "meta": {k: v for k, v in result["meta"].items() if k != "metrics"}}
        return True, result

    def _optional(self, name: str, invoke: Callable[[Any], Any], absent: Any, stubbed: Any = UNSET) -> Any:
        """``invoke(method)`` if the user class has ``name``, else ``absent`` (raised if an error);
        a `SeldonComponent` stub counts as absent (or answers ``stubbed``)."""
        function = self._user_method(name)
        if function is not None:
            try:
                return invoke(function)
            except Exception as exc:
                if not is_not_implemented(exc):
                    raise
                if stubbed is not UNSET:
                    return stubbed
        if isinstance(absent, SeldonError):
            raise absent
        return absent

    def _user_method(self, name: str) -> Callable[..., Any] | None:
        """The user object's method ``name``, or None; looked up once per name, after `load` (as
        `_meta_rule`), not on every request."""
        try:
            return self._user_methods[name]
        except KeyError:
            function = getattr(self.user, name, None)
            found = self._user_methods[name] = function if callable(function) else None
            return found

    def _with_meta(self, name: str, function: Callable[..., Any], X: Any, names: Any, meta: Any) -> Any:
        rule = self._meta_rule.get(name)
        if rule:
            return function(X, names, meta=meta)
        if rule is None:  # the signature could not be read: Seldon's try-then-retry
            try:
                return function(X, names, meta=meta)
            except TypeError:
                pass
        return function(X, names)


def _plain(value: Any) -> Any:
    """A protobuf message returned by user code as JSON values; anything else as it is."""
    if isinstance(value, Message):
        return json_format.MessageToDict(value)
    return value
