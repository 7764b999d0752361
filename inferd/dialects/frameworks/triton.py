"""Triton's model configuration (``config.pbtxt``, protobuf text format): the part of Triton's
``ModelConfig`` that says what a model folder serves (``platform``/``backend``,
``default_model_filename``, ``version_policy``, ``max_batch_size``) and its inputs and outputs
(``name``, ``data_type``, ``dims``).

The file is parsed by protobuf's own text-format parser against Triton's own schema (its
``model_config.proto`` descriptor, shipped beside this module: `SCHEMA_FILE`; a test compares it
with the copy tritonclient ships), so nothing here parses text itself and a file Triton would
refuse is refused. Fields with no inferd meaning (``instance_group``, ``dynamic_batching``,
``parameters``...) are named in the log and ignored. Used by the repository
room (which folder is a Triton model, and in what format) and the model-file runtimes (the inputs
and outputs it declares)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from inferd.core.types import TensorSpec

logger = logging.getLogger("inferd.triton")

CONFIG_FILE = "config.pbtxt"
#: Triton's ``model_config.proto`` as a serialized FileDescriptorProto (taken from tritonclient
#: 2.73's generated ``model_config_pb2``; Triton is BSD-3-Clause, Copyright NVIDIA CORPORATION).
SCHEMA_FILE = "triton_model_config.binpb"
#: Triton's DataType enum, in its order (``TYPE_STRING`` is V2's ``BYTES``).
DATATYPES = (
    *("INVALID", "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64"),
    *("FP16", "FP32", "FP64", "STRING", "BF16"),
)
#: ``platform`` or ``backend`` → the model-file format serving it, and the file Triton looks for.
FORMATS = {
    "onnxruntime_onnx": ("onnx", "model.onnx"),
    "onnxruntime": ("onnx", "model.onnx"),
    "tensorflow_savedmodel": ("tensorflow", "model.savedmodel"),
}


#: The ModelConfig fields inferd reads.
READ_FIELDS = frozenset(
    {"name", "platform", "backend", "max_batch_size", "default_model_filename", "version_policy"}
    | {"input", "output"}
)


class ConfigError(ValueError):
    """A ``config.pbtxt`` that protobuf cannot parse as Triton's model configuration."""


@dataclass(frozen=True)
class TritonConfig:
    name: str
    platform: str
    backend: str
    max_batch_size: int
    default_model_filename: str
    #: The version policy as a repository's ``versions`` value (None: Triton's default, the latest).
    versions: Any
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]

    @property
    def kind(self) -> str:
        """What the config says serves it: its platform, else its backend."""
        return self.platform or self.backend

    def model_format(self) -> tuple[str, str] | None:
        """The model-file format and the file in a version folder (`FORMATS`), or None."""
        found = FORMATS.get(self.platform) or FORMATS.get(self.backend)
        if found is None or (self.backend == "tensorflow" and self.platform != "tensorflow_savedmodel"):
            return found
        return found[0], self.default_model_filename or found[1]


@cache
def _schema() -> Any:
    """Triton's ModelConfig message class, from its descriptor shipped beside this module."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    proto = descriptor_pb2.FileDescriptorProto()
    proto.ParseFromString((Path(__file__).parent / SCHEMA_FILE).read_bytes())
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("inference.ModelConfig"))


def read_config(path: Path) -> TritonConfig:
    """``config.pbtxt`` at ``path`` (the file or its model folder)."""
    from google.protobuf import text_format

    file = path if path.name == CONFIG_FILE else path / CONFIG_FILE
    try:
        text = file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{CONFIG_FILE} cannot be read: {exc}") from None
    message = _schema()()
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as exc:
        raise ConfigError(f"{CONFIG_FILE} is not Triton's model configuration: {exc}") from None
    skipped = _skipped(message)
    if skipped:
        logger.info("%s: fields %s have no meaning to inferd and are ignored", file, skipped)
    batched = message.max_batch_size > 0
    return TritonConfig(
        message.name,
        message.platform,
        message.backend,
        message.max_batch_size,
        message.default_model_filename,
        _versions(message),
        tuple(_spec(item, batched) for item in message.input),
        tuple(_spec(item, batched) for item in message.output),
    )


def _spec(item: Any, batched: bool) -> TensorSpec:
    """A config input or output as a V2 spec: Triton's batch dimension (``max_batch_size`` > 0)
    is the first, of any size, before ``dims``."""
    datatype = DATATYPES[item.data_type]
    shape = tuple(int(dim) for dim in item.dims)
    return TensorSpec(
        item.name, "BYTES" if datatype == "STRING" else datatype, (-1, *shape) if batched else shape
    )


def _versions(message: Any) -> Any:
    if not message.HasField("version_policy"):
        return None
    policy = message.version_policy
    chosen = next((name for name in ("latest", "all", "specific") if policy.HasField(name)), None)
    if chosen == "latest":
        return {"latest": policy.latest.num_versions or 1}
    if chosen == "specific":
        return {"specific": list(policy.specific.versions)}
    return "all" if chosen == "all" else None


def _skipped(message: Any) -> list[str]:
    """The fields the config sets that inferd does not read."""
    return sorted(field.name for field, _ in message.ListFields() if field.name not in READ_FIELDS)
