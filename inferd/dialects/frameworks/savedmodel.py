"""TensorFlow SavedModels: where ``saved_model.pb`` is (the folder, or TF Serving's highest numeric
version folder), the serving meta graph's signatures and their inputs and outputs. Used by the
Cortex room (its TensorFlow APIs) and the model-file runtimes (``inferd serve saved_model/``).
TensorFlow is imported only when a function here needs it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from inferd.core.errors import ModelLoadError, TargetError
from inferd.core.types import TensorSpec, datatype_of

SAVED_MODEL = "saved_model.pb"
SERVING_TAG = "serve"


def find_saved_model(root: Path) -> Path:
    """The dir holding ``saved_model.pb``: ``root`` itself, its highest numeric version dir, or the same
    inside ``root``'s only subdirectory (a zip of an export folder)."""
    if (root / SAVED_MODEL).is_file():
        return root
    subdirs = [entry for entry in root.iterdir() if entry.is_dir() and not entry.name.startswith((".", "__"))]
    versions = [entry for entry in subdirs if entry.name.isdigit() and (entry / SAVED_MODEL).is_file()]
    if versions:
        return max(versions, key=lambda entry: int(entry.name))
    if len(subdirs) == 1:
        return find_saved_model(subdirs[0])
    raise TargetError(f"model {root}: no {SAVED_MODEL} in it or in a numeric version directory")


@dataclass(frozen=True)
class Port:
    """One input or output of the chosen signature."""

    name: str
    dtype: str  # TF enum name, e.g. DT_FLOAT
    numpy: np.dtype[Any]
    shape: tuple[int, ...] | None  # None: unknown rank; -1: unknown size


def signature_defs(folder: Path) -> dict[str, Any]:
    """The serving meta graph's signatures, without TF's internal ones (``__saved_model_init_op``)."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString((folder / SAVED_MODEL).read_bytes())
    for graph in saved.meta_graphs:
        if SERVING_TAG in graph.meta_info_def.tags:
            return {key: value for key, value in graph.signature_def.items() if not key.startswith("__")}
    raise ModelLoadError(f"{folder}: no meta graph tagged '{SERVING_TAG}'")


def ports(infos: Any) -> dict[str, Port]:
    """A signature's inputs or outputs (a protobuf map of TensorInfo), by name."""
    import tensorflow as tf
    from tensorflow.core.framework import types_pb2

    found = {}
    for name in sorted(infos):  # a protobuf map has no order of its own
        info = infos[name]
        dtype = tf.dtypes.as_dtype(info.dtype)
        shape = None if info.tensor_shape.unknown_rank else tuple(dim.size for dim in info.tensor_shape.dim)
        numpy = np.dtype(object) if dtype == tf.string else np.dtype(dtype.as_numpy_dtype)
        found[name] = Port(name, types_pb2.DataType.Name(info.dtype), numpy, shape)
    return found


def tensor_specs(ports: dict[str, Port]) -> tuple[TensorSpec, ...]:
    """V2 specs of a signature's inputs or outputs (unknown rank: one dimension of any size)."""
    return tuple(
        TensorSpec(port.name, datatype_of(np.empty(0, port.numpy)), port.shape or (-1,))
        for port in ports.values()
    )
