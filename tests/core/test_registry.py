"""The model registry's lifecycle: load, readiness, versions, unload, failures."""

from __future__ import annotations

import numpy as np
import pytest

import inferd
from inferd.core.errors import ModelLoadError, ModelNotFound, ModelNotReady
from inferd.core.registry import ModelRegistry, ModelState


class Counter(inferd.Model):
    loads = 0

    async def load(self) -> None:
        Counter.loads += 1

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return inputs


class Broken(inferd.Model):
    def load(self) -> None:
        raise OSError("weights.bin is missing")


async def test_models_are_built_and_loaded_from_factories() -> None:
    registry = ModelRegistry()
    registry.add("counter", Counter, version="1")
    with pytest.raises(ModelNotReady, match="not ready"):
        registry.get("counter")
    before = Counter.loads
    await registry.load_all()
    model = registry.get("counter")
    assert (model.name, model.version) == ("counter", "1")
    assert Counter.loads == before + 1
    assert registry.all_ready()


async def test_latest_version_is_the_numerically_highest() -> None:
    registry = ModelRegistry()
    for version in ("9", "10", "2"):
        registry.add("m", Counter, version=version)
    await registry.load_all()
    assert registry.get("m").version == "10"
    assert registry.get("m", "9").version == "9"
    with pytest.raises(ModelNotFound, match="no version '3'"):
        registry.get("m", "3")


async def test_unload_then_load_again() -> None:
    registry = ModelRegistry()
    registry.add("counter", Counter)
    await registry.load_all()
    await registry.unload("counter")
    assert registry.entry("counter").state is ModelState.UNAVAILABLE
    assert not registry.all_ready()
    await registry.load("counter")
    assert registry.entry("counter").ready


async def test_a_failed_load_says_why_and_leaves_the_model_unavailable() -> None:
    registry = ModelRegistry()
    registry.add("broken", Broken)
    with pytest.raises(ModelLoadError, match=r"weights\.bin is missing"):
        await registry.load_all()
    entry = registry.entry("broken")
    assert entry.state is ModelState.UNAVAILABLE
    assert "OSError" in entry.reason


def test_duplicates_and_unknown_names() -> None:
    registry = ModelRegistry()
    registry.add("a", Counter)
    with pytest.raises(ValueError, match="registered twice"):
        registry.add("a", Counter)
    with pytest.raises(ModelNotFound, match="'b' is not served here"):
        registry.entry("b")
