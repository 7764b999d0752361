"""Loading request handlers and predictors, and checking their parameter names as Cortex did.

A handler file is loaded by its path as ``request_handler_<api>`` (a predictor as ``predictor_<api>``)
with the project dir on ``sys.path``; a ``.pickle`` file is a dill-pickled dict of the same functions. Each
function is checked at startup: 0.8/0.9 two-parameter or 0.10 three-parameter names, nothing else.
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from inferd.core.errors import TargetError
from inferd.core.importer import add_to_path, import_file_privately, working_directory
from inferd.dialects.cortex import log
from inferd.dialects.cortex.config import ApiConfig

#: Accepted parameter names per function: (0.8/0.9 names, 0.10 names).
HANDLER_PARAMS = {
    "pre_inference": (("sample", "metadata"), ("sample", "signature", "metadata")),
    "post_inference": (("prediction", "metadata"), ("prediction", "signature", "metadata")),
}
PREDICTOR_PARAMS = {"init": ("model_path", "metadata"), "predict": ("sample", "metadata")}

#: A checked user function called as ``fn(value, signature, metadata)`` whatever its own style.
Hook = Callable[[Any, Any, dict[str, Any]], Any]


@dataclass(frozen=True)
class Handlers:
    path: str
    pre_inference: Hook | None
    post_inference: Hook | None


def prepare_imports(api: ApiConfig) -> None:
    """Project dir and ``python_path`` on sys.path, and the ``cortex.lib.log`` shim importable."""
    log.install()
    add_to_path(api.project_dir)
    if api.python_path is not None:
        add_to_path(api.python_path)


def load_namespace(api: ApiConfig, prefix: str) -> dict[str, Any]:
    """The functions a handler or predictor file defines, by name. Like Cortex, the file is loaded by
    its path under a name of its own (``request_handler_<api>``); its folder is not put on
    ``sys.path``, and its file name never shadows a library (a handler ``onnx.py`` that does
    ``import onnx`` gets the library). A file that fails to load stops startup naming the API and the
    file."""
    assert api.handler is not None
    if not api.handler.is_file():
        raise TargetError(f"api {api.name}: {api.handler_name}: no such file")
    prepare_imports(api)
    with working_directory(api.project_dir):
        try:
            if api.handler.suffix == ".pickle":
                return _unpickle(api)
            return vars(import_file_privately(api.handler, f"{prefix}_{api.name}"))
        except TargetError:
            raise
        except Exception as exc:
            raise _load_error(api, exc) from exc


def _load_error(api: ApiConfig, exc: Exception) -> TargetError:
    """``api <name>: request_handler <file>: cannot load it: <error>``, with the file's line that
    raised (a SyntaxError names its own)."""
    assert api.handler is not None
    lines = [
        frame.lineno
        for frame in traceback.extract_tb(exc.__traceback__)
        if frame.filename == str(api.handler)
    ]
    where = f" (line {lines[-1]})" if lines and not isinstance(exc, SyntaxError) else ""
    return TargetError(f"{_file(api)}: cannot load it: {type(exc).__name__}: {exc}{where}")


def load_handlers(api: ApiConfig) -> Handlers:
    if api.handler is None:
        return Handlers("", None, None)
    namespace = load_namespace(api, "request_handler")
    hooks = {name: _hook(api, namespace.get(name), name, styles) for name, styles in HANDLER_PARAMS.items()}
    return Handlers(api.handler_name or "", hooks["pre_inference"], hooks["post_inference"])


def load_predictor(api: ApiConfig) -> tuple[Callable[..., Any] | None, Callable[..., Any]]:
    """The checked ``init`` (optional) and ``predict`` (required) of a 0.10 predictor."""
    namespace = load_namespace(api, "predictor")
    found = {name: namespace.get(name) for name in PREDICTOR_PARAMS}
    predict = found["predict"]
    if not callable(predict):
        raise _error(api, "predict", "function is required but was not found")
    for name, fn in found.items():
        if callable(fn):
            _check(api, name, fn, (PREDICTOR_PARAMS[name],))
    init = found["init"]
    return (init if callable(init) else None), predict


def _hook(api: ApiConfig, fn: Any, name: str, styles: tuple[tuple[str, ...], ...]) -> Hook | None:
    if not callable(fn):
        return None
    if len(_check(api, name, fn, styles)) == 3:
        return cast(Hook, fn)
    return lambda value, signature, metadata: fn(value, signature)


def _check(
    api: ApiConfig, name: str, fn: Callable[..., Any], styles: tuple[tuple[str, ...], ...]
) -> tuple[str, ...]:
    """The parameter names of ``fn`` when they match a style; else the upstream startup error."""
    parameters = list(inspect.signature(fn).parameters.values())
    names = tuple(str(parameter) for parameter in parameters)
    if names in styles:
        return names
    expected = next((style for style in styles if len(style) == len(names)), styles[-1])
    raise _error(
        api,
        name,
        f"expected function arguments arguments ({', '.join(expected)}) but found ({', '.join(names)})",
    )


def _error(api: ApiConfig, function: str, message: str) -> TargetError:
    return TargetError(f"{_file(api)}: function {function}: {message}")


def _file(api: ApiConfig) -> str:
    """``api <name>: request_handler <file>`` (or ``predictor <file>``), how startup errors begin."""
    kind = "predictor" if api.format in ("predictor", "class") else "request_handler"
    return f"api {api.name}: {kind} {api.handler_name}"


def _unpickle(api: ApiConfig) -> dict[str, Any]:
    try:
        import dill
    except ImportError:
        raise TargetError(
            f"api {api.name}: request_handler {api.handler_name}: .pickle handlers need dill "
            "(pip install dill)"
        ) from None
    assert api.handler is not None
    with api.handler.open("rb") as file:
        loaded = dill.load(file)
    if not isinstance(loaded, dict):
        raise TargetError(f"api {api.name}: request_handler {api.handler_name}: expected a pickled dict")
    return loaded
