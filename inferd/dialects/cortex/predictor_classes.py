"""Loading a Cortex 0.12-0.33 predictor class and calling it as Cortex did.

Cortex looked the class up by its predictor ``type`` (``PythonPredictor``, ``ONNXPredictor``,
``TensorFlowPredictor``), read the parameter names of ``__init__``, ``predict`` and ``post_predict``, and
passed only the arguments a method names (``payload``, ``query_params``, ``headers``, ``batch_id``...), by
name. The file is loaded at start-up so that a missing class or a wrong parameter stops ``inferd
serve`` with exit 2; the class is constructed when the model loads (an ``__init__`` that raises ends
the server with exit 1 and the user's frames).
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inferd.core.errors import TargetError
from inferd.dialects.cortex.config import ApiConfig
from inferd.dialects.cortex.config_classes import CLASS_NAMES
from inferd.dialects.cortex.handlers import load_namespace

#: The constructor's parameters per predictor type: the required ones, then the optional ones.
INIT_PARAMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "python": (("config",), ("python_client", "job_spec")),
    "onnx": (("onnx_client", "config"), ("job_spec",)),
    "tensorflow": (("tensorflow_client", "config"), ("job_spec",)),
}
#: A 0.34-0.35 ``Handler``'s constructor parameters per type.
HANDLER_INIT_PARAMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "python": (("config",), ("model_client", "metrics_client")),
    "tensorflow": (("config", "tensorflow_client"), ("metrics_client",)),
}
#: The HTTP methods a Handler may answer, each by its ``handle_<method>``.
HANDLER_METHODS = ("POST", "GET", "PUT", "PATCH", "DELETE")
HANDLE_PARAMS = ("payload", "query_params", "headers")
logger = logging.getLogger("inferd.cortex")
PREDICT_PARAMS = ("payload", "query_params", "headers", "batch_id")
POST_PREDICT_PARAMS = ("response", "payload", "query_params", "headers")


class MetricsClient:
    """A 0.34-0.35 ``metrics_client``: custom metrics are logged at debug level (Cortex sent them to
    its Prometheus)."""

    def put_metric(self, key: str, value: float, tags: dict[str, str] | None = None) -> None:
        logger.debug("metric %s=%s %s", key, value, tags or {})

    increment_counter = put_metric
    set_gauge = put_metric
    histogram = put_metric


@dataclass(frozen=True)
class PredictorClass:
    """The checked class and the parameter names of its methods."""

    cls: type[Any]
    init_args: tuple[str, ...]
    #: HTTP method -> (the method answering it, its parameter names).
    methods: dict[str, tuple[str, tuple[str, ...]]]
    post_predict_args: tuple[str, ...] | None

    def construct(self, api: ApiConfig, clients: dict[str, Any]) -> Any:
        """An instance, ``env`` applied first and arguments passed by the names ``__init__`` uses."""
        os.environ.update(api.env)
        available = {
            "config": dict(api.metadata),
            "job_spec": None,
            "metrics_client": MetricsClient(),
            **clients,
        }
        return self.cls(**{name: available.get(name) for name in self.init_args})


def load_predictor_class(api: ApiConfig) -> PredictorClass:
    """The predictor (or handler) class of ``api``, checked as Cortex checked it at deploy time."""
    assert api.predictor_type is not None
    class_name = "Handler" if api.handler_class else CLASS_NAMES[api.predictor_type]
    os.environ.update(api.env)  # module-level code may read it, as in Cortex's container
    namespace = load_namespace(api, "predictor")
    cls = namespace.get(class_name)
    if not inspect.isclass(cls):
        raise _error(api, f"class {class_name}: class is required but was not found")
    params = HANDLER_INIT_PARAMS if api.handler_class else INIT_PARAMS
    required, optional = params[api.predictor_type]
    init_args = _names(api, class_name, "__init__", cls.__init__, required, optional)
    if api.handler_class:
        return _handler_class(api, cls, init_args)
    predict = getattr(cls, "predict", None)
    if not callable(predict):
        raise _error(api, f"class {class_name}: function predict: function is required but was not found")
    predict_args = _names(api, class_name, "predict", predict, (), PREDICT_PARAMS)
    post_predict = getattr(cls, "post_predict", None)
    post_args = None
    if callable(post_predict):
        post_args = _names(api, class_name, "post_predict", post_predict, (), POST_PREDICT_PARAMS)
    return PredictorClass(cls, init_args, {"POST": ("predict", predict_args)}, post_args)


def _handler_class(api: ApiConfig, cls: type[Any], init_args: tuple[str, ...]) -> PredictorClass:
    """A Handler: each ``handle_<method>`` it defines answers that HTTP method; one is required."""
    methods = {}
    for method in HANDLER_METHODS:
        function = f"handle_{method.lower()}"
        fn = getattr(cls, function, None)
        if callable(fn):
            methods[method] = (function, _names(api, "Handler", function, fn, (), HANDLE_PARAMS))
    if not methods:
        raise _error(api, "class Handler: function handle_post: a handle_<method> function is required")
    return PredictorClass(cls, init_args, methods, None)


def _names(
    api: ApiConfig,
    class_name: str,
    method: str,
    fn: Callable[..., Any],
    required: tuple[str, ...],
    optional: tuple[str, ...],
) -> tuple[str, ...]:
    """The parameter names of ``fn`` after ``self``; each one Cortex knows, the required ones present."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())[1:]
    except (TypeError, ValueError):
        return required
    names = tuple(
        parameter.name
        for parameter in parameters
        if parameter.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    )
    unknown = [name for name in names if name not in (*required, *optional)]
    missing = [name for name in required if name not in names]
    if unknown or missing:
        allowed = ", ".join([*required, *(f"{name} (optional)" for name in optional)])
        raise _error(
            api,
            f"class {class_name}: function {method}: expected arguments ({allowed}) "
            f"but found ({', '.join(names)})",
        )
    return names


def _error(api: ApiConfig, message: str) -> TargetError:
    return TargetError(f"api {api.name}: predictor {api.handler_name}: {message}")
