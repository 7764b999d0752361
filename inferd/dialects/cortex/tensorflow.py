"""TensorFlow SavedModels for Cortex APIs, run in-process the way Cortex ran them behind TF Serving.

What handlers see is what TF Serving's protobuf answers looked like to them: the signature argument is
the whole ``signature_def`` map as protobuf JSON (camelCase keys, dim sizes as strings), and
post_inference gets ``{output: flat list}`` taken from each output's typed value field, so int64 values
are strings and DT_STRING values base64. TensorFlow is an optional extra, imported only here and only
when a TensorFlow API loads.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from inferd.core.errors import MissingExtra, ModelLoadError, TargetError
from inferd.core.types import Array
from inferd.dialects.cortex.errors import CortexError
from inferd.dialects.frameworks.savedmodel import (
    SAVED_MODEL,
    SERVING_TAG,
    Port,
    find_saved_model,
    ports,
    signature_defs,
)
from inferd.dialects.frameworks.savedmodel import (
    tensor_specs as tensor_specs,  # the adapter's, re-exported
)

DEFAULT_KEY = "predict"

#: Output dtype (TF enum name) → the TensorProto field TF Serving filled with its values.
VALUE_FIELDS = {
    "DT_FLOAT": "float_val",
    "DT_DOUBLE": "double_val",
    "DT_HALF": "half_val",
    "DT_INT8": "int_val",
    "DT_INT16": "int_val",
    "DT_INT32": "int_val",
    "DT_UINT8": "int_val",
    "DT_UINT16": "int_val",
    "DT_INT64": "int64_val",
    "DT_UINT32": "uint32_val",
    "DT_UINT64": "uint64_val",
    "DT_BOOL": "bool_val",
    "DT_STRING": "string_val",
}


def require_tensorflow() -> None:
    """Fail at startup, not at load, when the ``tensorflow`` extra is missing."""
    if importlib.util.find_spec("tensorflow") is None:
        raise MissingExtra(
            "TensorFlow models need TensorFlow: pip install 'inferd[tensorflow]'", "tensorflow"
        )


def check_model_path(path: Path) -> None:
    """A startup check that ``path`` holds a SavedModel: a dir (version dirs or not) or a ``.zip`` of one."""
    if path.is_dir():
        find_saved_model(path)
    elif not zipfile.is_zipfile(path):
        raise TargetError(f"model {path}: expected a SavedModel directory or a .zip of one")
    elif not any(Path(name).name == SAVED_MODEL for name in zipfile.ZipFile(path).namelist()):
        raise TargetError(f"model {path}: the archive holds no {SAVED_MODEL}")


class SavedModel:
    """A loaded SavedModel and its chosen signature, called with numpy arrays."""

    def __init__(self, path: Path, signature_key: str | None) -> None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        self._extracted: tempfile.TemporaryDirectory[str] | None = None
        if not path.is_dir():
            self._extracted = tempfile.TemporaryDirectory(prefix="inferd-savedmodel-")
            with zipfile.ZipFile(path) as archive:
                archive.extractall(self._extracted.name)
            path = Path(self._extracted.name)
        try:
            self._load(find_saved_model(path), signature_key)
        except BaseException:
            self.close()
            raise

    def _load(self, folder: Path, signature_key: str | None) -> None:
        import tensorflow as tf
        from google.protobuf.json_format import MessageToDict

        definitions = signature_defs(folder)
        self.key = _choose(definitions, signature_key, folder)
        self.signature_map: dict[str, Any] = {
            key: MessageToDict(definition) for key, definition in definitions.items()
        }
        self.inputs = ports(definitions[self.key].inputs)
        self.outputs = ports(definitions[self.key].outputs)
        self._loaded = tf.saved_model.load(str(folder), tags=[SERVING_TAG])
        self._function = self._loaded.signatures[self.key]
        self._constant = tf.constant

    def close(self) -> None:
        """Remove the extracted copy of a zipped model."""
        if self._extracted is not None:
            self._extracted.cleanup()
            self._extracted = None

    def run(self, feed: dict[str, Array]) -> dict[str, Array]:
        outputs = self._function(**{name: self._constant(value) for name, value in feed.items()})
        return {name: tensor.numpy() for name, tensor in outputs.items()}

    def to_inputs(self, prepared: Any) -> dict[str, Array]:
        """The feed for ``prepared``: a dict holding every input, converted to its dtype, never reshaped
        and never checked against the signature's shape (see `_convert`)."""
        if not isinstance(prepared, dict):
            keys = ", ".join(f'"{name}"' for name in self.inputs)
            raise CortexError(f"expected sample to be a dictionary with keys {keys}")
        for name in self.inputs:
            if name not in prepared:
                raise CortexError(f'missing key "{name}"')
        # Cortex looked every key up in the signature: an unknown one failed with the KeyError's text.
        return {key: _convert(value, self.inputs[key]) for key, value in prepared.items()}

    def flatten(self, outputs: dict[str, Array]) -> dict[str, list[Any]]:
        """``{output: flat list}`` as Cortex read it from TF Serving's JSON-rendered TensorProtos."""
        return {name: _value_field(outputs[name], self.outputs[name].dtype) for name in outputs}

    def signature_body(self) -> dict[str, Any]:
        """``GET <endpoint>/signature``: the chosen signature's inputs with int shapes and numpy types."""
        return {
            port.name: {
                "shape": list(port.shape) if port.shape is not None else None,
                "type": port.numpy.name,
            }
            for port in self.inputs.values()
        }


def _choose(definitions: dict[str, Any], wanted: str | None, folder: Path) -> str:
    """``signature_key`` when set; else the only signature; else ``predict``."""
    keys = sorted(definitions)
    if wanted is None and len(keys) == 1:
        return keys[0]
    key = wanted or DEFAULT_KEY
    if key not in definitions:
        found = ", ".join(keys) or "none"
        hint = "" if wanted else " (set signature_key to choose one)"
        raise ModelLoadError(f"{folder}: signature {key!r} not found; the model has: {found}{hint}")
    return key


def _convert(value: Any, port: Port) -> Array:
    """``value`` as a tensor of the input's dtype in the shape it has, as Cortex built it
    (``make_tensor_proto`` with a dtype and no shape). TF Serving never checked a fed tensor against
    the signature's shape, so neither does this: a scalar for a ``[-1]`` input stays a scalar, and the
    model graph accepts it or fails (a 406 like any model error)."""
    try:
        return np.asarray(value, dtype=port.numpy)
    except (TypeError, ValueError) as exc:
        raise CortexError(
            f'key "{port.name}"', f"failed to convert to a {port.dtype} tensor", str(exc)
        ) from None


def _value_field(array: Array, dtype: str) -> list[Any]:
    from google.protobuf.json_format import MessageToDict
    from tensorflow.core.framework import tensor_pb2

    field = VALUE_FIELDS.get(dtype)
    if field is None:
        raise CortexError(f"output type {dtype} is not supported")
    flat = array.ravel()
    if dtype == "DT_HALF":
        flat = flat.view(np.uint16)
    proto = tensor_pb2.TensorProto()
    getattr(proto, field).extend(flat.tolist())
    camel = "".join(part.capitalize() if index else part for index, part in enumerate(field.split("_")))
    values: list[Any] = MessageToDict(proto).get(camel, [])
    return values
