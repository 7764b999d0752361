"""The registry over a changing model source: reconciling with scans, loading on demand within a
limit (least recently used unloaded first), and unloads that wait for the calls inside a model."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pytest

import inferd
from inferd.core.dataplane import DataPlane
from inferd.core.errors import ModelLoadError, ModelNotFound, ModelNotReady
from inferd.core.metrics import MODEL_UNLOADS
from inferd.core.registry import ModelRegistry, ModelState
from inferd.core.registry import loading as loading_module
from inferd.core.repository import Scan, ServedModel
from inferd.core.types import InferenceRequest, ServerMetadata


class Answer(inferd.Model):
    """Answers ``x + offset``; counts the instances alive, so a test sees what is loaded."""

    alive: ClassVar[set[str]] = set()
    #: Models unloaded while a call was inside them (what draining prevents).
    torn: ClassVar[list[str]] = []

    def __init__(self, label: str, offset: float, delay: float = 0.0) -> None:
        super().__init__()
        self.label, self.offset, self.delay, self.busy = label, offset, delay, 0

    def load(self) -> None:
        Answer.alive.add(self.label)

    def unload(self) -> None:
        Answer.alive.discard(self.label)
        if self.busy:
            Answer.torn.append(self.label)

    async def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.busy += 1
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.busy -= 1
        return {"y": inputs["x"] + self.offset}


class Broken(inferd.Model):
    def load(self) -> None:
        raise OSError("model.onnx is truncated")


class SlowToLoad(inferd.Model):
    """Its load blocks for ``seconds`` (``pause``, when it is set: a test changes it between loads)
    and then fails when ``broken``; every load begun is recorded with where it ran, the event loop's
    thread or another."""

    loads: ClassVar[list[tuple[str, str]]] = []
    pause: ClassVar[float | None] = None
    loop_thread: ClassVar[int] = 0

    def __init__(self, label: str, seconds: float = 0.0, broken: bool = False) -> None:
        super().__init__()
        self.label, self.seconds, self.broken = label, seconds, broken

    def load(self) -> None:
        where = "loop" if threading.get_ident() == SlowToLoad.loop_thread else "thread"
        SlowToLoad.loads.append((self.label, where))
        time.sleep(self.seconds if SlowToLoad.pause is None else SlowToLoad.pause)
        if self.broken:
            raise OSError("model.onnx is truncated")

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"y": inputs["x"] + 10}


def slow_to_load(name: str, seconds: float = 0.0, broken: bool = False) -> ServedModel:
    return ServedModel(name, lambda: SlowToLoad(name, seconds, broken), None, f"/repo/{name}", "a")


def served(
    name: str, offset: float, version: str | None = None, fingerprint: str = "a", delay: float = 0.0
) -> ServedModel:
    label = f"{name}@{version}#{fingerprint}"
    return ServedModel(name, lambda: Answer(label, offset, delay), version, f"/repo/{name}", fingerprint)


class Folder:
    """A model source held in memory: what a test puts in it is what the next scan finds."""

    uri = "/repo"

    def __init__(self, *models: ServedModel) -> None:
        self.models = list(models)
        self.problems: dict[str, str] = {}
        self.written: list[tuple[str, Mapping[str, Any] | None, Mapping[str, bytes]]] = []

    def scan(self) -> Scan:
        return Scan(tuple(self.models), dict(self.problems))

    def scan_model(self, name: str) -> Scan:
        models = tuple(model for model in self.models if model.name == name)
        if not models and name not in self.problems:
            raise ModelNotFound(f"model '{name}' is not in the repository")
        return Scan(models, {key: value for key, value in self.problems.items() if key == name})

    def write(self, name: str, config: Mapping[str, Any] | None, files: Mapping[str, bytes]) -> None:
        self.written.append((name, config, files))
        self.models.append(served(name, float(len(files)), fingerprint="written"))


def request(value: float) -> InferenceRequest:
    return InferenceRequest(inputs={"x": np.array([value])})


async def answer(dataplane: DataPlane, name: str, version: str | None = None) -> float:
    response = await dataplane.infer(name, version, request(0.0), "test")
    return float(response.outputs["y"][0])


def plane(registry: ModelRegistry) -> DataPlane:
    return DataPlane(registry, ServerMetadata("inferd", "test", ()))


@pytest.fixture(autouse=True)
def nothing_alive() -> None:
    Answer.alive.clear()
    Answer.torn.clear()
    SlowToLoad.loads.clear()
    SlowToLoad.pause = None
    SlowToLoad.loop_thread = threading.get_ident()


async def test_refresh_adds_reloads_and_removes_what_the_repository_changed() -> None:
    folder = Folder(served("a", 1), served("b", 2))
    registry = ModelRegistry(folder)
    dataplane = plane(registry)
    await registry.refresh()
    assert (await answer(dataplane, "a"), await answer(dataplane, "b")) == (1, 2)

    folder.models = [served("a", 10, fingerprint="b"), served("c", 3)]
    await registry.refresh()
    assert await answer(dataplane, "a") == 10
    assert await answer(dataplane, "c") == 3
    with pytest.raises(ModelNotFound):
        await answer(dataplane, "b")
    assert Answer.alive == {"a@None#b", "c@None#a"}  # the old a and b were unloaded
    assert registry.entry("a").source == "/repo/a"


async def test_a_model_that_cannot_be_read_or_loaded_leaves_the_old_one_serving() -> None:
    folder = Folder(served("a", 1))
    registry = ModelRegistry(folder)
    dataplane = plane(registry)
    await registry.refresh()
    folder.models, folder.problems = [], {"a": "model 'a' in /repo/a: inferd.yaml is not YAML"}
    await registry.refresh()
    assert await answer(dataplane, "a") == 1

    folder.problems = {}
    folder.models = [ServedModel("a", Broken, None, "/repo/a", "broken")]
    await registry.refresh()  # logged, not raised: a poll keeps going
    assert await answer(dataplane, "a") == 1
    with pytest.raises(
        ModelLoadError, match=r"'a' failed to load from /repo/a: OSError: model\.onnx is truncated"
    ):
        await registry.load("a")
    assert await answer(dataplane, "a") == 1


async def test_an_explicit_load_reads_the_model_again_and_says_what_is_wrong() -> None:
    folder = Folder(served("a", 1))
    registry = ModelRegistry(folder)
    dataplane = plane(registry)
    folder.models.append(served("late", 5))
    await registry.load("late")  # added since the last scan
    assert await answer(dataplane, "late") == 5
    with pytest.raises(ModelNotFound, match="not in the repository"):
        await registry.load("nope")
    folder.problems = {"a": "model 'a' in /repo/a: two folders give this name"}
    with pytest.raises(ModelLoadError, match="two folders"):
        await registry.load("a")


async def test_load_with_files_writes_them_into_the_repository_first() -> None:
    folder = Folder()
    registry = ModelRegistry(folder)
    await plane(registry).load_model(
        "new", None, {"dialect": "native"}, {"1/model.py": b"x", "2/model.py": b"y"}
    )
    assert folder.written == [("new", {"dialect": "native"}, {"1/model.py": b"x", "2/model.py": b"y"})]
    assert await answer(plane(registry), "new") == 2
    with pytest.raises(ModelLoadError, match="no model repository"):
        await plane(ModelRegistry()).load_model("new", None, {"dialect": "native"}, {})


async def test_versions_are_loaded_and_unloaded_together_and_each_answers() -> None:
    folder = Folder(served("m", 1, "1"), served("m", 2, "2"))
    registry = ModelRegistry(folder)
    dataplane = plane(registry)
    await registry.refresh()
    assert (
        await answer(dataplane, "m", "1"),
        await answer(dataplane, "m", "2"),
        await answer(dataplane, "m"),
    ) == (
        1,
        2,
        2,
    )
    await registry.unload("m")
    assert {entry.state for entry in registry.versions("m")} == {ModelState.UNAVAILABLE}
    await registry.load("m")
    assert all(entry.ready for entry in registry.versions("m"))


async def test_models_load_on_first_call_and_the_least_recently_used_make_room() -> None:
    registry = ModelRegistry(
        Folder(*(served(name, index) for index, name in enumerate("abcd"))), max_loaded=2
    )
    dataplane = plane(registry)
    await registry.refresh()
    await registry.load_all()
    assert Answer.alive == set() and registry.all_ready()  # nothing loaded yet, nothing failed
    assert await answer(dataplane, "a") == 0
    assert await answer(dataplane, "b") == 1
    assert await answer(dataplane, "a") == 0  # a is now the most recently used
    assert await answer(dataplane, "c") == 2
    assert {label[0] for label in Answer.alive} == {"a", "c"}  # b was the least recently used
    results = await asyncio.gather(*(answer(dataplane, name) for name in "abcdabcd"))
    assert results == [0, 1, 2, 3, 0, 1, 2, 3]
    assert len(Answer.alive) <= 2


async def test_calls_of_a_loading_model_share_its_load_while_loaded_models_answer() -> None:
    registry = ModelRegistry(Folder(served("a", 1), slow_to_load("big", 0.3)), max_loaded=2)
    dataplane = plane(registry)
    await registry.refresh()
    assert await answer(dataplane, "a") == 1
    calls = [asyncio.create_task(answer(dataplane, "big")) for _ in range(4)]
    await asyncio.sleep(0.05)
    assert registry.entry("big").state is ModelState.LOADING
    assert await answer(dataplane, "a") == 1  # not held up by big's load
    assert not any(call.done() for call in calls)
    assert await asyncio.gather(*calls) == [10.0] * 4
    assert SlowToLoad.loads == [("big", "thread")]  # one load for the four calls


async def test_a_call_that_gives_up_does_not_stop_the_load_for_the_others() -> None:
    registry = ModelRegistry(Folder(slow_to_load("big", 0.3)), max_loaded=2)
    dataplane = plane(registry)
    await registry.refresh()
    first, second = (asyncio.create_task(answer(dataplane, "big")) for _ in range(2))
    await asyncio.sleep(0.05)
    first.cancel()  # the call that started the load: its client left
    assert await second == 10.0
    assert SlowToLoad.loads == [("big", "thread")]  # loaded once, not again for the second call


async def test_calls_of_a_model_that_fails_to_load_share_the_failure() -> None:
    registry = ModelRegistry(Folder(slow_to_load("bad", 0.1, broken=True)), max_loaded=2)
    dataplane = plane(registry)
    await registry.refresh()
    calls = [asyncio.create_task(answer(dataplane, "bad")) for _ in range(3)]
    failures = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(failure, ModelLoadError) for failure in failures)
    assert "model 'bad' failed to load from /repo/bad" in str(failures[0])
    assert "truncated" in str(failures[0])
    assert len(SlowToLoad.loads) == 1  # not once per call
    with pytest.raises(ModelLoadError):  # a later call tries again
        await answer(dataplane, "bad")
    assert len(SlowToLoad.loads) == 2


async def test_a_quick_model_keeps_loading_on_the_loop_through_one_slow_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(loading_module, "QUICK_LOAD", 0.05)
    registry = ModelRegistry(Folder(slow_to_load("quick"), served("other", 2)), max_loaded=1)
    dataplane = plane(registry)
    await registry.refresh()
    for pause in (0.0, 0.0, 0.1, 0.1, 0.0, 0.0):
        SlowToLoad.pause = pause
        assert await answer(dataplane, "quick") == 10
        assert await answer(dataplane, "other") == 2  # unloads quick: its next call loads it again
    # first in a thread (never loaded), then on the loop; one slow load is forgiven, the second in
    # a row sends it back to a thread, and one quick load there brings it back to the loop
    where = [place for _, place in SlowToLoad.loads]
    assert where == ["thread", "loop", "loop", "loop", "thread", "loop"]


async def test_a_swap_to_make_room_is_one_log_line_naming_both_models(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ModelRegistry(Folder(served("a", 1), served("b", 2)), max_loaded=1)
    dataplane = plane(registry)
    await registry.refresh()
    unloads = MODEL_UNLOADS.labels("a")._value.get()
    with caplog.at_level(logging.INFO, logger="inferd.registry"):
        assert await answer(dataplane, "a") == 1
        assert await answer(dataplane, "b") == 2
        await registry.unload("b")
    lines = [record.getMessage() for record in caplog.records]
    assert lines[0].startswith("model a loaded in ") and "in place of" not in lines[0]
    assert lines[1].startswith("model b loaded in ")
    assert lines[1].endswith(", in place of model a (the least recently used, unloaded to make room)")
    assert lines[2:] == ["model b unloaded"]  # an unload not for room keeps its own line
    assert MODEL_UNLOADS.labels("a")._value.get() == unloads + 1  # still counted


async def test_eviction_waits_for_the_calls_inside_the_model() -> None:
    registry = ModelRegistry(Folder(served("slow", 1, delay=0.3), served("other", 2)), max_loaded=1)
    dataplane = plane(registry)
    await registry.refresh()
    slow = asyncio.create_task(answer(dataplane, "slow"))
    await asyncio.sleep(0.05)
    assert registry.entry("slow").inflight == 1
    assert await answer(dataplane, "other") == 2  # waited for slow's call before unloading it
    assert await slow == 1
    assert registry.entry("slow").state is ModelState.UNAVAILABLE
    assert Answer.torn == []


async def test_a_model_unloaded_on_request_is_not_loaded_back_by_a_call() -> None:
    registry = ModelRegistry(Folder(served("a", 1)), max_loaded=2)
    dataplane = plane(registry)
    await registry.refresh()
    assert await answer(dataplane, "a") == 1
    await registry.unload("a")
    with pytest.raises(ModelNotReady):
        await answer(dataplane, "a")
    await registry.load("a")
    assert await answer(dataplane, "a") == 1


async def test_unload_drains_in_flight_calls_within_the_drain_time() -> None:
    registry = ModelRegistry(Folder(served("slow", 1, delay=0.3)), drain_seconds=5)
    dataplane = plane(registry)
    await registry.refresh()
    call = asyncio.create_task(answer(dataplane, "slow"))
    await asyncio.sleep(0.05)
    await registry.unload("slow")
    assert call.done() and call.result() == 1  # the unload returned only once the call had its answer
    assert Answer.torn == []


async def test_a_call_that_outlives_the_drain_time_does_not_hold_the_unload() -> None:
    registry = ModelRegistry(Folder(served("stuck", 1, delay=1.0)), drain_seconds=0.1)
    dataplane = plane(registry)
    await registry.refresh()
    call = asyncio.create_task(answer(dataplane, "stuck"))
    await asyncio.sleep(0.05)
    await asyncio.wait_for(registry.unload("stuck"), 0.5)
    assert Answer.torn == ["stuck@None#a"] and not call.done()
    await call
