"""The inputs and outputs a Triton ``config.pbtxt`` declares, put in place of an ONNX or SavedModel
model's own signature, as Triton serves them: each must be one of the model's, of its datatype (a
load error naming both otherwise); their shapes are the config's (Triton's batch dimension first
when ``max_batch_size`` > 0); the outputs it lists are those answered. A config declaring none
leaves the model's own."""

from __future__ import annotations

from pathlib import Path

from inferd.core.errors import ModelLoadError
from inferd.core.types import TensorSpec
from inferd.dialects.frameworks.triton import ConfigError, read_config

Specs = tuple[TensorSpec, ...]


def declared(config: str | None, inputs: Specs, outputs: Specs, model: Path) -> tuple[Specs, Specs]:
    """``inputs`` and ``outputs`` as the config at ``config`` declares them (None: as they are)."""
    if config is None:
        return inputs, outputs
    try:
        found = read_config(Path(config))
    except ConfigError as exc:
        raise ModelLoadError(f"{config}: {exc}") from None
    return (
        _checked(found.inputs, inputs, "input", config, model),
        _checked(found.outputs, outputs, "output", config, model),
    )


def _checked(wanted: Specs, own: Specs, kind: str, config: str, model: Path) -> Specs:
    if not wanted:
        return own
    by_name = {spec.name: spec for spec in own}
    for spec in wanted:
        actual = by_name.get(spec.name)
        if actual is None:
            raise ModelLoadError(
                f"{config} declares the {kind} {spec.name!r}, which {model} does not have "
                f"(its {kind}s: {sorted(by_name)})"
            )
        if actual.datatype != spec.datatype:
            raise ModelLoadError(
                f"{config} declares the {kind} {spec.name!r} as {spec.datatype}; {model} has it as "
                f"{actual.datatype}"
            )
    return wanted
