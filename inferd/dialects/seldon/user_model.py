"""inferd's own equivalents of the names Seldon user code imports, so seldon-core is never required.

``seldon_core.user_model.SeldonResponse`` / ``SeldonComponent`` and ``seldon_core.flask_utils.
SeldonMicroserviceException`` / ``SeldonNotImplementedError`` behave here as in seldon-core 1.18. When
seldon-core is not installed (or cannot be imported), `stand_in.install_aliases` makes those two
module paths resolve to this module, so ``from seldon_core.user_model import SeldonResponse`` works
unchanged; a working seldon-core is never shadowed. The dialect recognises the real classes by duck
typing (`is_response`, `inferd.protocols.seldon.errors.seldon_exception_fields`), so it never imports
seldon-core itself. The two exceptions are the protocol's (`inferd.protocols.seldon.errors`): they are
Seldon's error body as an exception.
"""

from __future__ import annotations

import logging
from typing import Any, NoReturn

from inferd.protocols.seldon.errors import SeldonMicroserviceException, SeldonNotImplementedError

__all__ = [
    "SeldonComponent",
    "SeldonMicroserviceException",
    "SeldonNotImplementedError",
    "SeldonResponse",
    "is_response",
]

logger = logging.getLogger("inferd.seldon")


class SeldonResponse:
    """A return value carrying per-request ("runtime") tags and metrics beside the data."""

    def __init__(
        self, data: Any, tags: dict[str, Any] | None = None, metrics: list[dict[str, Any]] | None = None
    ) -> None:
        self.data = data
        self.tags = tags or {}
        self.metrics = metrics or []

    @classmethod
    def create(cls, data: Any) -> SeldonResponse:
        return data if is_response(data) else cls(data)


class SeldonComponent:
    """Optional base class: every stub raises `SeldonNotImplementedError`, so only what a subclass
    overrides counts as implemented."""

    def __init__(self, **kwargs: Any) -> None:
        pass

    def _missing(self, name: str) -> NoReturn:
        raise SeldonNotImplementedError(f"{name} is not implemented")

    def tags(self) -> dict[str, Any]:
        return self._missing("tags")

    def class_names(self) -> list[str]:
        return self._missing("class_names")

    def load(self) -> None:
        pass

    def predict(self, X: Any, names: Any, meta: Any = None) -> Any:
        return self._missing("predict")

    def predict_raw(self, msg: Any) -> Any:
        return self._missing("predict_raw")

    def send_feedback_raw(self, feedback: Any) -> Any:
        return self._missing("send_feedback_raw")

    def transform_input(self, X: Any, names: Any, meta: Any = None) -> Any:
        return self._missing("transform_input")

    def transform_input_raw(self, msg: Any) -> Any:
        return self._missing("transform_input_raw")

    def transform_output(self, X: Any, names: Any, meta: Any = None) -> Any:
        return self._missing("transform_output")

    def transform_output_raw(self, msg: Any) -> Any:
        return self._missing("transform_output_raw")

    def metrics(self) -> list[dict[str, Any]]:
        return self._missing("metrics")

    def feature_names(self) -> list[str]:
        return self._missing("feature_names")

    def send_feedback(
        self, features: Any, feature_names: Any, reward: Any, truth: Any, routing: Any = None
    ) -> Any:
        return self._missing("send_feedback")

    def route(self, features: Any, feature_names: Any) -> int:
        return self._missing("route")

    def route_raw(self, msg: Any) -> Any:
        return self._missing("route_raw")

    def aggregate(self, features_list: Any, feature_names_list: Any) -> Any:
        return self._missing("aggregate")

    def aggregate_raw(self, msgs: Any) -> Any:
        return self._missing("aggregate_raw")

    def health_status(self) -> Any:
        return self._missing("health_status")

    def health_status_raw(self) -> Any:
        return self._missing("health_status_raw")

    def init_metadata(self) -> dict[str, Any]:
        return self._missing("init_metadata")


def is_response(value: Any) -> bool:
    """A `SeldonResponse`, inferd's or seldon-core's."""
    return type(value).__name__ == "SeldonResponse" and hasattr(value, "data") and hasattr(value, "tags")
