"""KServe's V1 bodies (TensorFlow Serving's REST API) as inference requests and back.

A request holds ``instances`` (the row form: one item per row, or per row an object naming each
input) or ``inputs`` (the columnar form: one value, or an object of named values). An unnamed input
is the model's only declared input (``input-0`` when it declares none), cast to the datatype it
declares. The answer is ``predictions`` for ``instances`` (a list of rows; a list of objects, one
per row, when the model gives several outputs) and ``outputs`` for ``inputs`` (one value, or an
object of named values). Text is JSON strings, bytes that are not UTF-8 ``{"b64": ...}`` as
TensorFlow Serving writes them. A top-level ``parameters`` object reaches the model as the
request's parameters (a model-file runtime's ``method``).
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from inferd.core.errors import InvalidInput
from inferd.core.types import DTYPES, Array, InferenceRequest, InferenceResponse, ModelMetadata, Parameters
from inferd.protocols.json import loads

#: The name of an unnamed input for a model that declares none.
DEFAULT_INPUT = "input-0"


def decode(body: bytes, metadata: ModelMetadata) -> tuple[InferenceRequest, bool]:
    """The request, and whether it was in the row form (``instances``)."""
    document = loads(body or b"null")
    if not isinstance(document, dict) or ("instances" in document) == ("inputs" in document):
        raise InvalidInput('Expected "instances" or "inputs" in the request body (one of them)')
    parameters = _parameters(document.get("parameters"))
    if "instances" in document:
        instances = document["instances"]
        if not isinstance(instances, list) or not instances:
            raise InvalidInput('Expected "instances" to be a non-empty list')
        if all(isinstance(row, dict) for row in instances):
            names = set(instances[0])
            if any(set(row) != names for row in instances):
                raise InvalidInput("every instance must name the same inputs")
            inputs = {
                name: _array(name, [row[name] for row in instances], metadata) for name in sorted(names)
            }
        else:
            inputs = {_only_input(metadata): _array(_only_input(metadata), instances, metadata)}
        return InferenceRequest(inputs, parameters), True
    given = document["inputs"]
    if isinstance(given, dict):
        inputs = {str(name): _array(str(name), value, metadata) for name, value in given.items()}
    else:
        inputs = {_only_input(metadata): _array(_only_input(metadata), given, metadata)}
    return InferenceRequest(inputs, parameters), False


def encode(response: InferenceResponse, rows: bool) -> dict[str, Any]:
    outputs = {name: _json(array) for name, array in response.outputs.items()}
    if not rows:
        return {"outputs": next(iter(outputs.values())) if len(outputs) == 1 else outputs}
    if len(outputs) == 1:
        return {"predictions": next(iter(outputs.values()))}
    lengths = {len(value) if isinstance(value, list) else -1 for value in outputs.values()}
    if len(lengths) != 1 or -1 in lengths:  # outputs without a common row count: by name
        return {"predictions": outputs}
    count = lengths.pop()
    return {"predictions": [{name: value[row] for name, value in outputs.items()} for row in range(count)]}


def _only_input(metadata: ModelMetadata) -> str:
    if not metadata.inputs:
        return DEFAULT_INPUT
    if len(metadata.inputs) == 1 or metadata.loose_inputs:
        return metadata.inputs[0].name
    names = [spec.name for spec in metadata.inputs]
    raise InvalidInput(f"model '{metadata.name}' takes inputs {names}: name each (an object per instance)")


def _array(name: str, value: Any, metadata: ModelMetadata) -> Array:
    spec = metadata.input_specs.get(name)
    dtype = DTYPES[spec.datatype] if spec is not None and spec.datatype != "BYTES" else None
    try:
        array = np.asarray(value, dtype=dtype)
    except (ValueError, TypeError, OverflowError) as exc:
        raise InvalidInput(f"input '{name}' is not a rectangular array of {_kind(dtype)}: {exc}") from None
    if array.dtype.kind == "U":
        return np.array([text.encode() for text in array.ravel()], dtype=object).reshape(array.shape)
    if array.dtype.kind == "O":
        raise InvalidInput(f"input '{name}' is not a rectangular array of numbers, booleans or strings")
    return array


def _kind(dtype: np.dtype[Any] | None) -> str:
    return "numbers, booleans or strings" if dtype is None else f"{dtype.name} values"


def _parameters(value: Any) -> Parameters:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(item, (str, int, float, bool)) for item in value.values()
    ):
        raise InvalidInput('"parameters" must be an object of strings, numbers and booleans')
    return {str(key): item for key, item in value.items()}


def _json(array: Array) -> Any:
    if array.dtype.kind in "OS":
        return np.vectorize(_text, otypes=[object])(array).tolist()
    return array.tolist()


def _text(element: Any) -> Any:
    if isinstance(element, bytes):
        try:
            return element.decode()
        except UnicodeDecodeError:
            return {"b64": base64.b64encode(element).decode()}
    return element if isinstance(element, (str, int, float, bool)) or element is None else str(element)
