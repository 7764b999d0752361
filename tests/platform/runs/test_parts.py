"""The parts of runs without a control process: the store's one-run-per-file transaction, the checks
of inputs and outputs, what a trigger sees in a folder, and which versions run as ABEJA handlers."""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from inferd.core.errors import InvalidInput
from inferd.platform.artifacts import ArtifactStore
from inferd.platform.records import RunState, Version
from inferd.platform.runs import Runs, locations
from inferd.platform.runs.execute import abeja_handler
from inferd.platform.store import Store
from inferd.storage import ModelCache
from tests.storage.conftest import Bucket

DIGEST = "sha256:" + "ab" * 32


def test_a_file_gets_one_run_however_often_and_from_however_many_stores(tmp_path: Path) -> None:
    path = tmp_path / "platform.sqlite"
    with Store(path) as store:
        deployment = store.create_deployment("app")
        version = store.add_version(deployment.id, "1", DIGEST, 10)
        trigger = store.add_trigger(deployment.id, version.id, "/in", "/out")

        def attempt(_: int) -> bool:
            with Store(path) as other:
                return other.add_trigger_run(trigger.id, "a.json", ["/in/a.json"], "/out") is not None

        with ThreadPoolExecutor(4) as pool:
            assert sorted(pool.map(attempt, range(8))) == [False] * 7 + [True]
        (run,) = store.runs(trigger_id=trigger.id)
        assert run.state is RunState.PENDING and run.inputs == ("/in/a.json",) and run.output == "/out"
        assert store.trigger_saw(trigger.id, "a.json")

        store.update_trigger(trigger.id, enabled=False)
        assert store.add_trigger_run(trigger.id, "b.json", ["/in/b.json"], "/out") is None
        assert not store.trigger_saw(trigger.id, "b.json")  # a disabled trigger records nothing


def test_a_trigger_gives_its_parameters_to_its_runs(tmp_path: Path) -> None:
    with Store(tmp_path / "platform.sqlite") as store:
        deployment = store.create_deployment("app")
        version = store.add_version(deployment.id, "1", DIGEST, 10)
        trigger = store.add_trigger(deployment.id, version.id, "/in", "/out", parameters={"COLOUR": "red"})
        assert store.trigger(trigger.id).parameters == {"COLOUR": "red"}
        run = store.add_trigger_run(trigger.id, "a.json", ["/in/a.json"], "/out")
        assert run is not None and store.run(run.id).parameters == {"COLOUR": "red"}


def test_inputs_and_outputs_are_checked(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text("{}")
    (tmp_path / "file").write_text("x")
    assert locations.check_inputs([str(tmp_path / "in"), "s3://bucket/x.json"])
    with pytest.raises(InvalidInput, match="missing"):
        locations.check_inputs([str(tmp_path / "missing")])
    with pytest.raises(InvalidInput, match="absolute"):
        locations.check_inputs(["in/a.json"])
    with pytest.raises(InvalidInput, match="at most"):
        locations.check_inputs([str(tmp_path / "in")] * (locations.MAX_INPUTS + 1))
    with pytest.raises(InvalidInput, match="is a file"):
        locations.check_output(str(tmp_path / "file"))
    assert locations.check_output("s3://bucket/out") == "s3://bucket/out/"
    # an http(s) location: each answer PUT under its path, its query string kept after it
    assert locations.check_output("https://example.com/out?token=t") == "https://example.com/out/?token=t"
    with pytest.raises(InvalidInput, match="names no host"):
        locations.check_output("https:///out/")
    with pytest.raises(InvalidInput, match="ftp"):
        locations.check_output("ftp://host/out/")
    with pytest.raises(InvalidInput, match="prefix"):
        locations.check_watched("s3://bucket/in")
    assert locations.check_output(str(tmp_path / "new")) == str(tmp_path / "new")


def test_a_trigger_sees_finished_files_only(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("a.json", "sub/b.png", ".hidden", "c.json.part", "d.tmp"):
        (tmp_path / name).write_text("x")
    seen = locations.watched(str(tmp_path))
    assert sorted(seen) == ["a.json", "sub/b.png"]
    assert seen["a.json"].input == str(tmp_path / "a.json")
    before = seen["a.json"].fingerprint
    (tmp_path / "a.json").write_text("xy")
    os.utime(tmp_path / "a.json", ns=(1, 1))
    assert locations.watched(str(tmp_path))["a.json"].fingerprint != before


def version(dialect: str = "auto", target: str = ".", **environment: str) -> Version:
    return Version("ver-1", "dep-1", "1", DIGEST, 1, target, dialect, dict(environment))


def test_which_versions_run_as_abeja_handlers(tmp_path: Path) -> None:
    assert abeja_handler(version(), tmp_path) is None
    assert abeja_handler(version("abeja", "app:run"), tmp_path) == "app:run"
    assert abeja_handler(version("abeja"), tmp_path) == "main:handler"
    assert abeja_handler(version(HANDLER="m:h"), tmp_path) == "m:h"
    assert abeja_handler(version("native", HANDLER="m:h"), tmp_path) is None
    (tmp_path / "inferd.yaml").write_text("dialect: abeja\ntarget: mine:handle\n")
    assert abeja_handler(version(), tmp_path) == "mine:handle"


def test_storage_inputs_are_fetched_and_a_prefix_is_watched(bucket: Bucket, tmp_path: Path) -> None:
    first = bucket.put("incoming/a.json", b'{"x": [1.0]}')
    bucket.put("incoming/sub/b.json", b'{"x": [2.0]}')
    bucket.put("incoming/.hidden", b"x")
    cache = ModelCache(tmp_path / "cache", 1024**2)
    files = locations.expand([first, f"s3://{bucket.name}/incoming/sub/"], cache)
    assert [file.read_bytes() for file in files] == [b'{"x": [1.0]}', b'{"x": [2.0]}']
    prefix = f"s3://{bucket.name}/incoming/"
    seen = locations.watched(prefix)
    assert sorted(seen) == ["a.json", "sub/b.json"]
    assert seen["a.json"].input == first
    assert locations.watched(f"s3://{bucket.name}/empty/") == {}


def test_a_prefix_trigger_runs_each_new_object_once_across_restarts(bucket: Bucket, tmp_path: Path) -> None:
    bucket.put("in/old.json", b"{}")  # there before the trigger: not run
    prefix = f"s3://{bucket.name}/in/"

    async def looks(runs: Runs) -> list[tuple[str, ...]]:
        """Two looks (an object is run once two find it unchanged): the inputs of the runs started."""
        started = [*await runs.look(), *await runs.look()]
        return [run.inputs for run in started]

    async def scenario() -> None:
        with Store(tmp_path / "platform.sqlite") as store:
            artifacts = ArtifactStore(tmp_path / "artifacts", 10**6)
            deployment = store.create_deployment("app")
            version = store.add_version(deployment.id, "1", DIGEST, 10)
            runs = Runs(store, artifacts, tmp_path)
            trigger = await runs.create_trigger("app", version.id, prefix, f"s3://{bucket.name}/out")
            assert trigger.output == f"s3://{bucket.name}/out/"
            bucket.put("in/a.json", b"{}")
            assert await looks(runs) == [(prefix + "a.json",)]
            assert await looks(runs) == []
            runs.detach()

            again = Runs(store, artifacts, tmp_path)  # a new control process, which never looked
            bucket.put("in/sub/b.json", b"{}")
            assert await looks(again) == [(prefix + "sub/b.json",)]
            again.detach()
            recorded = sorted(run.inputs[0] for run in store.runs(trigger_id=trigger.id))
            assert recorded == [prefix + "a.json", prefix + "sub/b.json"]

    asyncio.run(scenario())
