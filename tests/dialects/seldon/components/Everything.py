"""A Seldon component with every high-level method, parameters, tags, metrics and errors.

What it does is chosen by the request, so one server covers many cases:
- predict: features ``[[0]]`` raise SeldonMicroserviceException 403, ``[[-1]]`` raise ValueError,
  ``[[7, 7]]`` answer a SeldonResponse with runtime tags and metrics; otherwise ``X * factor``.
"""

import numpy as np
from seldon_core.flask_utils import SeldonMicroserviceException
from seldon_core.user_model import SeldonResponse


class Everything:
    def __init__(self, factor=1, label="none", enabled=False, ratio=0.0):
        self.factor, self.label, self.enabled, self.ratio = factor, label, enabled, ratio
        self.loads = 0
        self.feedback = []
        self.seen_meta = None

    def load(self):
        self.loads += 1

    def predict(self, X, names, meta):
        self.seen_meta = meta
        if isinstance(X, str):
            return self._by_word(X)
        if X.size == 1 and X.ravel()[0] == 0:
            raise SeldonMicroserviceException("nope", status_code=403, reason="MY_REASON")
        if X.size == 1 and X.ravel()[0] == -1:
            raise ValueError("negative one is not allowed")
        if X.shape == (1, 2) and (X == 7).all():
            return SeldonResponse(
                X,
                tags={"rt": "yes", "shared": "runtime"},
                metrics=[{"type": "GAUGE", "key": "runtime_gauge", "value": 7}],
            )
        if X.dtype.kind in "iuf":
            return X * self.factor
        return X

    def _by_word(self, word):
        if word == "config":
            return {
                "factor": self.factor,
                "label": self.label,
                "enabled": self.enabled,
                "ratio": self.ratio,
                "loads": self.loads,
                "types": [type(v).__name__ for v in (self.factor, self.label, self.enabled, self.ratio)],
            }
        if word == "meta":
            return {"meta": self.seen_meta}
        if word == "bad metric":
            return SeldonResponse(word, metrics=[{"key": "no_value", "type": "GAUGE"}])
        if word == "untyped":
            return SeldonResponse(word, metrics=[{"key": "high_untyped", "value": 2}])
        if word == "timer":
            return SeldonResponse(word, metrics=[{"type": "TIMER", "key": "runtime_timer", "value": 1500}])
        return word

    def transform_input(self, X, names, meta=None):
        return X * 2

    def transform_output(self, X, names, meta=None):
        return X + 1

    def route(self, X, names, meta=None):
        if meta and "route" in meta.get("tags", {}):  # the request's meta reaches route
            return int(meta["tags"]["route"])
        return int(X.ravel()[0])

    def aggregate(self, Xs, names_list):
        return np.sum([np.asarray(x) for x in Xs], axis=0)

    def send_feedback(self, features, names, reward, truth, routing=None):
        self.feedback.append((features.tolist(), reward, truth.tolist(), routing))
        return None

    def tags(self):
        return {"static": 1, "shared": "static"}

    def metrics(self):
        return [
            {"type": "COUNTER", "key": "everything_calls", "value": 1, "tags": {"kind": "test"}},
            {"type": "GAUGE", "key": "everything_gauge", "value": 42},
            {"type": "TIMER", "key": "everything_timer", "value": 20.2},
        ]

    def class_names(self):
        return ["left", "right"]

    def health_status(self):
        return [1, 2]

    def init_metadata(self):
        return {
            "name": "everything",
            "versions": ["everything/v1"],
            "platform": "inferd-tests",
            "inputs": [{"messagetype": "ndarray", "schema": {"names": ["a", "b"], "shape": [2]}}],
            "outputs": [{"name": "out", "datatype": "FP64", "shape": [1, 2]}],
            "custom": {"owner": "tests"},
        }
