"""Triton's model configuration (its ``ModelConfig``, as JSON) derived from a served model.

Triton's clients read a model's configuration to learn its batching and tensors: ``max_batch_size``
above 0 means every input and output has a batch dimension first, left out of ``dims``; 0 means
``dims`` are the whole shape (Triton's image client, for one, counts the input's dimensions from
it). A model whose first input's first dimension is -1 takes batches: under adaptive batching
(`inferd.core.batching.BatchingModel`) its ``max_batch_size`` and ``max_batch_time_ms`` are
Triton's ``max_batch_size`` and ``dynamic_batching``; without, inferd holds a request to no number
of rows, said as the largest ``max_batch_size`` (`UNBOUNDED_BATCH`). Other models say 0. A
repository load given a ``config`` keeps the keys it was given: they are laid over the derived
ones (`with_given`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferd.core.types import ModelMetadata, TensorSpec

#: V2 datatype → Triton's ``DataType`` name.
TRITON_TYPES = {
    "BOOL": "TYPE_BOOL",
    "UINT8": "TYPE_UINT8",
    "UINT16": "TYPE_UINT16",
    "UINT32": "TYPE_UINT32",
    "UINT64": "TYPE_UINT64",
    "INT8": "TYPE_INT8",
    "INT16": "TYPE_INT16",
    "INT32": "TYPE_INT32",
    "INT64": "TYPE_INT64",
    "FP16": "TYPE_FP16",
    "FP32": "TYPE_FP32",
    "FP64": "TYPE_FP64",
    "BYTES": "TYPE_STRING",
    "BF16": "TYPE_BF16",
}


#: ``max_batch_size`` of a model that takes batches of any number of rows (Triton's field is int32).
UNBOUNDED_BATCH = 2**31 - 1


def derived_config(
    metadata: ModelMetadata, model: Any, backend: str, labelled: bool = False
) -> dict[str, Any]:
    """The configuration of a loaded model: ``model`` is what the registry holds (a
    ``BatchingModel`` when it batches), ``backend`` the dialect serving it; ``labelled``: it has
    class labels (`inferd.core.classification`), named as Triton's ``label_filename``."""
    settings = getattr(model, "settings", None)
    size = getattr(settings, "max_batch_size", 0) if hasattr(model, "batcher") else 0
    batching = isinstance(size, int) and size > 1 and metadata.batched  # 1: adaptive batching off
    batched = metadata.batched
    config: dict[str, Any] = {
        "name": metadata.name,
        "platform": metadata.platform,
        "backend": backend,
        "max_batch_size": (size if batching else UNBOUNDED_BATCH) if batched else 0,
        "input": [{**_tensor(spec, batched), "format": "FORMAT_NONE"} for spec in metadata.inputs],
        "output": [_tensor(spec, batched) for spec in metadata.outputs],
    }
    if labelled:
        for output in config["output"]:
            output["label_filename"] = "labels.txt"
    if batching and isinstance(size, int):
        delay_ms = float(getattr(settings, "max_batch_time_ms", 0) or 0)
        config["dynamic_batching"] = {
            "preferred_batch_size": [size],
            "max_queue_delay_microseconds": int(delay_ms * 1000),
        }
    return config


def _tensor(spec: TensorSpec, batched: bool) -> dict[str, Any]:
    """A tensor's ``name``, ``data_type`` and ``dims`` (without the batch dimension when
    ``batched``: a tensor of one value a row is Triton's ``dims: [1]`` reshaped to ``[]``)."""
    shape = list(spec.shape)
    tensor = {"name": spec.name, "data_type": TRITON_TYPES.get(spec.datatype, "TYPE_INVALID")}
    if batched and shape and shape[0] == -1:
        shape = shape[1:]
        if not shape:
            return {**tensor, "dims": [1], "reshape": {"shape": []}}
    return {**tensor, "dims": shape}


def with_given(derived: Mapping[str, Any], given: Mapping[str, Any] | None) -> dict[str, Any]:
    """``derived`` with the keys a load's ``config`` gave laid over it (the model's name stays)."""
    merged = dict(derived)
    if given:
        merged.update({key: value for key, value in given.items() if key != "name"})
    return merged
