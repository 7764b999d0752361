"""The platform store on real SQLite files: records kept across a restart, schema migrations, the
rules of each kind (unique names, weights summing to 100, records in use), one transaction per call,
and several threads and store objects (as several processes) writing one file at once."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from inferd.core.errors import Conflict, InvalidInput, NotFound
from inferd.platform.records import Deployment, Route, RunState, Service, ServiceState, Version
from inferd.platform.store import MIGRATIONS, SchemaTooNew, Store
from inferd.platform.store import endpoints as endpoints_module

DIGEST = "sha256:" + "ab" * 32


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "platform.sqlite3"


@pytest.fixture
def store(path: Path) -> Iterator[Store]:
    with Store(path) as store:
        yield store


def deployment(store: Store, name: str = "iris") -> Deployment:
    return store.create_deployment(name)


def version(store: Store, dep: Deployment, label: str = "1") -> Version:
    return store.add_version(dep.id, label, DIGEST, 10)


def service(store: Store, dep: Deployment, state: ServiceState | None = None) -> Service:
    made = store.add_service(dep.id, version(store, dep, f"v{len(store.services())}").id)
    return made if state is None else store.update_service(made.id, state=state)


def raises(error: type[Exception], *words: str) -> Callable[[Callable[[], Any]], None]:
    def check(call: Callable[[], Any]) -> None:
        with pytest.raises(error) as caught:
            call()
        for word in words:
            assert word in str(caught.value)

    return check


# -- the file ----------------------------------------------------------------------------------------


def test_the_file_is_created_in_wal_mode_with_foreign_keys(store: Store, path: Path) -> None:
    assert path.is_file()
    assert store.schema_version == len(MIGRATIONS)
    with sqlite3.connect(path) as other:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert other.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert store._db.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_a_restart_sees_every_record(path: Path) -> None:
    with Store(path) as store:
        dep = store.create_deployment("iris", "the bundled classifier")
        ver = store.add_version(dep.id, "0.0.1", DIGEST, 1234, "model.py", "seldon", {"THRESHOLD": "0.5"})
        blue = store.add_service(dep.id, ver.id, workers=2, environment={"A": "1"}, max_replicas=3)
        green = store.add_service(dep.id, ver.id)
        blue = store.update_service(blue.id, state=ServiceState.RUNNING, port=8123, pid=4321)
        end = store.add_endpoint(dep.id, "main", [Route(blue.id, 90), Route(green.id, 10)])
        trigger = store.add_trigger(dep.id, ver.id, "/in", "/out")
        run = store.add_run(dep.id, ver.id, ["/in/a.csv"], "/out", {"k": [1, 2]}, trigger_id=trigger.id)
        assert not store.trigger_saw(trigger.id, "a.csv")
    with Store(path) as store:
        assert store.deployment("iris") == dep
        assert store.deployments() == [dep]
        assert store.versions("iris") == [ver]
        assert store.services(dep.id) == [blue, green]
        assert store.service(blue.id).port == 8123
        assert store.endpoint(end.id) == end
        assert store.endpoint(end.id).routes == (Route(blue.id, 90), Route(green.id, 10))
        assert store.run(run.id) == run
        assert store.run(run.id).inputs == ("/in/a.csv",)
        assert store.trigger(trigger.id) == trigger
        assert store.trigger_saw(trigger.id, "a.csv")
        assert ver.created_at.tzinfo is not None


def test_an_older_file_is_migrated_and_keeps_its_records(path: Path) -> None:
    with Store(path, migrations=MIGRATIONS[:1]) as old:
        dep = old.create_deployment("iris")
        assert old.schema_version == 1
    later = (*MIGRATIONS[:1], "ALTER TABLE deployments ADD COLUMN owner TEXT NOT NULL DEFAULT 'ops';")
    with Store(path, migrations=later) as new:
        assert new.schema_version == 2
        assert new.deployment("iris") == dep
        assert new._db.execute("SELECT owner FROM deployments").fetchall() == [("ops",)]
    with Store(path, migrations=later) as again:  # applied once only
        assert again.schema_version == 2


def test_a_failing_migration_leaves_the_file_at_its_last_good_version(path: Path) -> None:
    with Store(path, migrations=MIGRATIONS[:1]) as old:
        old.create_deployment("iris")
    broken = (*MIGRATIONS[:1], "CREATE TABLE notes (id TEXT);\nALTER TABLE nowhere ADD COLUMN x TEXT;")
    with pytest.raises(sqlite3.OperationalError, match="nowhere"):
        Store(path, migrations=broken)
    with Store(path, migrations=MIGRATIONS[:1]) as store:
        assert store.schema_version == 1
        tables = {name for (name,) in store._db.execute("SELECT name FROM sqlite_master")}
        assert "notes" not in tables
        assert [dep.name for dep in store.deployments()] == ["iris"]


def test_a_file_from_a_newer_inferd_is_refused(path: Path) -> None:
    Store(path, migrations=(*MIGRATIONS, "CREATE TABLE later (id TEXT);")).close()
    with pytest.raises(SchemaTooNew, match=f"schema version {len(MIGRATIONS) + 1}"):
        Store(path)


# -- deployments and versions ------------------------------------------------------------------------


def test_deployment_names_are_unique_and_usable_in_urls(store: Store) -> None:
    dep = deployment(store)
    assert store.deployment(dep.id) == store.deployment("iris") == dep
    raises(Conflict, "'iris'")(lambda: store.create_deployment("iris"))
    for bad in ("", "../x", "a/b", "-lead", "x" * 256):
        raises(InvalidInput, "deployment name")(lambda bad=bad: store.create_deployment(bad))
    raises(NotFound, "deployment", "'nope'")(lambda: store.deployment("nope"))
    assert store.deployments() == [dep]


def test_version_labels_are_unique_within_a_deployment(store: Store) -> None:
    iris, wine = deployment(store), deployment(store, "wine")
    first = version(store, iris, "0.0.1")
    raises(Conflict, "'0.0.1'")(lambda: version(store, iris, "0.0.1"))
    assert version(store, wine, "0.0.1").deployment_id == wine.id
    assert store.versions(iris.id) == [first]
    raises(InvalidInput, "digest")(lambda: store.add_version(iris.id, "2", "md5:00", 1))
    raises(InvalidInput, "size")(lambda: store.add_version(iris.id, "2", DIGEST, -1))
    raises(InvalidInput, "label")(lambda: store.add_version(iris.id, "../2", DIGEST, 1))
    raises(InvalidInput, "environment")(
        lambda: store.add_version(iris.id, "2", DIGEST, 1, environment={"A=B": "1"})
    )
    raises(NotFound, "deployment", "'gone'")(lambda: store.add_version("gone", "2", DIGEST, 1))
    raises(NotFound, "version", "'ver-000000000000'")(lambda: store.version("ver-000000000000"))


def test_a_version_in_use_cannot_be_deleted(store: Store) -> None:
    dep = deployment(store)
    svc = service(store, dep)
    raises(Conflict, "1 service(s)")(lambda: store.delete_version(svc.version_id))
    store.delete_service(svc.id)
    trigger = store.add_trigger(dep.id, svc.version_id, "/in", "/out")
    raises(Conflict, "1 trigger(s)")(lambda: store.delete_version(svc.version_id))
    store.delete_trigger(trigger.id)
    run = store.add_run(dep.id, svc.version_id, ["a"], "/out")
    raises(Conflict, "unfinished run")(lambda: store.delete_version(svc.version_id))
    store.update_run(run.id, state=RunState.SUCCEEDED)
    store.delete_version(svc.version_id)
    raises(NotFound, "version")(lambda: store.version(svc.version_id))
    raises(NotFound, "run")(lambda: store.run(run.id))


def test_a_deployment_in_use_cannot_be_deleted_and_takes_its_records_when_it_can(store: Store) -> None:
    dep = deployment(store)
    svc = service(store, dep, ServiceState.RUNNING)
    raises(Conflict, "1 active service(s)")(lambda: store.delete_deployment(dep.id))
    store.update_service(svc.id, state=ServiceState.STOPPED)
    end = store.add_endpoint(dep.id, "main", [Route(svc.id, 100)])
    raises(Conflict, "1 endpoint(s)")(lambda: store.delete_deployment("iris"))
    store.delete_endpoint(end.id)
    trigger = store.add_trigger(dep.id, svc.version_id, "/in", "/out")
    store.trigger_saw(trigger.id, "a")
    store.delete_deployment("iris")
    raises(NotFound)(lambda: store.deployment("iris"))
    raises(NotFound)(lambda: store.version(svc.version_id))
    raises(NotFound)(lambda: store.service(svc.id))
    raises(NotFound)(lambda: store.trigger(trigger.id))
    assert store._db.execute("SELECT count(*) FROM trigger_seen").fetchone()[0] == 0
    assert store.deployments() == []
    assert store.create_deployment("iris").id != dep.id  # the name is free again


# -- services ----------------------------------------------------------------------------------------


def test_a_service_starts_stopped_and_is_updated(store: Store) -> None:
    dep = deployment(store)
    svc = service(store, dep)
    assert svc.state is ServiceState.STOPPED and svc.port is None and svc.restarts == 0
    running = store.update_service(svc.id, state="running", port=9000, pid=77, restarts=2, reason="")
    assert running.state is ServiceState.RUNNING and running.updated_at > svc.updated_at
    assert store.service(svc.id) == running
    cleared = store.update_service(svc.id, state=ServiceState.STOPPED, port=None, pid=None)
    assert (cleared.port, cleared.pid, cleared.restarts) == (None, None, 2)
    raises(InvalidInput, "state", "running")(lambda: store.update_service(svc.id, state="dancing"))
    raises(InvalidInput, "port")(lambda: store.update_service(svc.id, port=70000))
    raises(InvalidInput, "workers")(lambda: store.update_service(svc.id, workers=True))
    raises(InvalidInput, "version_id cannot be changed")(lambda: store.update_service(svc.id, version_id="x"))
    raises(InvalidInput, "min_replicas (3)")(lambda: store.update_service(svc.id, min_replicas=3))
    raises(NotFound, "service", "'svc-missing'")(lambda: store.update_service("svc-missing", port=1))
    assert store.service(svc.id) == cleared


def test_a_service_runs_a_version_of_its_own_deployment(store: Store) -> None:
    iris, wine = deployment(store), deployment(store, "wine")
    wine_version = version(store, wine)
    raises(InvalidInput, "not a version of deployment 'iris'")(
        lambda: store.add_service(iris.id, wine_version.id)
    )
    raises(InvalidInput, "engine")(lambda: store.add_service(wine.id, wine_version.id, engine="k8s"))
    raises(InvalidInput, "min_replicas")(
        lambda: store.add_service(wine.id, wine_version.id, min_replicas=2, max_replicas=1)
    )
    raises(NotFound, "version")(lambda: store.add_service(wine.id, "ver-none"))
    assert store.services() == []
    ray = store.add_service(wine.id, wine_version.id, engine="ray", min_replicas=0, max_replicas=4)
    assert store.services("wine") == [ray] and store.services(iris.id) == []


def test_a_service_is_deleted_only_when_idle_and_unrouted(store: Store) -> None:
    dep = deployment(store)
    routed, shadow = service(store, dep, ServiceState.RUNNING), service(store, dep, ServiceState.FAILED)
    end = store.add_endpoint(dep.id, "main", [Route(routed.id, 100)], shadow.id, 5)
    raises(Conflict, "running")(lambda: store.delete_service(routed.id))
    store.update_service(routed.id, state=ServiceState.STOPPED)
    raises(Conflict, "'main'")(lambda: store.delete_service(routed.id))
    raises(Conflict, "'main'")(lambda: store.delete_service(shadow.id))
    store.update_endpoint(end.id, shadow_service_id=None)
    store.delete_service(shadow.id)
    raises(NotFound)(lambda: store.service(shadow.id))
    assert store.service(routed.id).state is ServiceState.STOPPED


# -- endpoints ---------------------------------------------------------------------------------------


@pytest.fixture
def two(store: Store) -> tuple[Deployment, Service, Service]:
    dep = deployment(store)
    return dep, service(store, dep), service(store, dep)


def test_endpoint_weights_sum_to_100(store: Store, two: tuple[Deployment, Service, Service]) -> None:
    dep, blue, green = two
    raises(InvalidInput, "sum to 100, not 110")(
        lambda: store.add_endpoint(dep.id, "main", [Route(blue.id, 90), Route(green.id, 20)])
    )
    raises(InvalidInput, "sum to 100, not 0")(lambda: store.add_endpoint(dep.id, "main", [Route(blue.id, 0)]))
    raises(InvalidInput, "at least one route")(lambda: store.add_endpoint(dep.id, "main", []))
    raises(InvalidInput, "from 0 to 100")(
        lambda: store.add_endpoint(dep.id, "main", [Route(blue.id, 150), Route(green.id, -50)])
    )
    raises(InvalidInput, "integer")(lambda: store.add_endpoint(dep.id, "main", [Route(blue.id, 100.0)]))  # type: ignore[arg-type]
    assert store.endpoints() == []
    end = store.add_endpoint(dep.id, "main", [Route(blue.id, 100), Route(green.id, 0)])
    assert store.endpoints(dep.id) == [end]


def test_endpoint_routes_name_distinct_services_of_its_deployment(
    store: Store, two: tuple[Deployment, Service, Service]
) -> None:
    dep, blue, green = two
    other = service(store, deployment(store, "wine"))
    raises(InvalidInput, "twice")(
        lambda: store.add_endpoint(dep.id, "e", [Route(blue.id, 50), Route(blue.id, 50)])
    )
    raises(InvalidInput, "another deployment")(
        lambda: store.add_endpoint(dep.id, "e", [Route(other.id, 100)])
    )
    raises(NotFound, "service", "'svc-ghost'")(
        lambda: store.add_endpoint(dep.id, "e", [Route("svc-ghost", 100)])
    )
    raises(InvalidInput, "both a route and the shadow")(
        lambda: store.add_endpoint(dep.id, "e", [Route(blue.id, 100)], blue.id, 10)
    )
    raises(InvalidInput, "another deployment")(
        lambda: store.add_endpoint(dep.id, "e", [Route(blue.id, 100)], other.id, 10)
    )
    raises(InvalidInput, "needs a shadow")(
        lambda: store.add_endpoint(dep.id, "e", [Route(blue.id, 100)], None, 10)
    )
    raises(InvalidInput, "shadow_percent")(
        lambda: store.add_endpoint(dep.id, "e", [Route(blue.id, 100)], green.id, 101)
    )
    raises(InvalidInput, "endpoint name")(lambda: store.add_endpoint(dep.id, "a b", [Route(blue.id, 100)]))
    assert store.endpoints() == []
    store.add_endpoint(dep.id, "e", [Route(blue.id, 100)], green.id, 10)
    raises(Conflict, "'e'")(lambda: store.add_endpoint(dep.id, "e", [Route(green.id, 100)]))


def test_an_endpoint_switches_traffic_and_a_bad_switch_changes_nothing(
    store: Store, two: tuple[Deployment, Service, Service]
) -> None:
    dep, blue, green = two
    end = store.add_endpoint(dep.id, "main", [Route(blue.id, 100)])
    canary = store.update_endpoint(end.id, routes=[Route(blue.id, 90), Route(green.id, 10)])
    assert store.endpoint(end.id) == canary and canary.routes[1] == Route(green.id, 10)
    raises(InvalidInput, "not 95")(
        lambda: store.update_endpoint(end.id, routes=[Route(blue.id, 90), Route(green.id, 5)])
    )
    raises(InvalidInput, "both a route and the shadow")(
        lambda: store.update_endpoint(end.id, shadow_service_id=green.id)
    )
    assert store.endpoint(end.id) == canary
    switched = store.update_endpoint(
        end.id, routes=[Route(green.id, 100)], shadow_service_id=blue.id, shadow_percent=20
    )
    assert (switched.routes, switched.shadow_service_id, switched.shadow_percent) == (
        (Route(green.id, 100),),
        blue.id,
        20,
    )
    kept = store.update_endpoint(end.id, shadow_percent=50)
    assert kept.routes == switched.routes and kept.shadow_service_id == blue.id
    unshadowed = store.update_endpoint(end.id, shadow_service_id=None)
    assert (unshadowed.shadow_service_id, unshadowed.shadow_percent) == (None, 0)
    assert store.endpoint(end.id) == unshadowed
    store.delete_endpoint(end.id)
    raises(NotFound, "endpoint")(lambda: store.endpoint(end.id))
    raises(NotFound, "endpoint")(lambda: store.delete_endpoint(end.id))
    assert store._db.execute("SELECT count(*) FROM endpoint_routes").fetchone()[0] == 0


def test_a_failure_inside_a_call_leaves_nothing_half_created(
    store: Store, two: tuple[Deployment, Service, Service], monkeypatch: pytest.MonkeyPatch
) -> None:
    dep, blue, _ = two

    def fail(*args: Any) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(endpoints_module, "_insert_routes", fail)
    with pytest.raises(sqlite3.OperationalError):
        store.add_endpoint(dep.id, "main", [Route(blue.id, 100)])
    assert store._db.execute("SELECT count(*) FROM endpoints").fetchone()[0] == 0
    assert not store._db.in_transaction
    monkeypatch.undo()
    assert store.add_endpoint(dep.id, "main", [Route(blue.id, 100)]).name == "main"


# -- runs and triggers -------------------------------------------------------------------------------


def test_a_run_moves_on_and_its_end_is_final(store: Store) -> None:
    dep = deployment(store)
    ver = version(store, dep)
    run = store.add_run(dep.id, ver.id, ["s3://in/a.csv", "/data/b.csv"], "/out", {"batch": 4})
    assert run.state is RunState.PENDING and run.finished_at is None
    running = store.update_run(run.id, state="running")
    assert running.finished_at is None
    failed = store.update_run(run.id, state=RunState.FAILED, reason="exit code 1")
    assert failed.finished_at is not None and failed.reason == "exit code 1"
    raises(Conflict, "failed already")(lambda: store.update_run(run.id, state=RunState.SUCCEEDED))
    assert store.run(run.id) == failed
    assert store.runs(dep.id) == [failed] and store.runs() == [failed]
    raises(InvalidInput, "inputs")(lambda: store.add_run(dep.id, ver.id, [], "/out"))
    raises(InvalidInput, "inputs")(lambda: store.add_run(dep.id, ver.id, "a.csv", "/out"))
    raises(InvalidInput, "JSON")(lambda: store.add_run(dep.id, ver.id, ["a"], "/out", {"x": object()}))
    raises(InvalidInput, "output")(lambda: store.add_run(dep.id, ver.id, ["a"], ""))
    raises(NotFound, "trigger")(lambda: store.add_run(dep.id, ver.id, ["a"], "/out", trigger_id="trg-none"))
    raises(NotFound, "run", "'run-none'")(lambda: store.run("run-none"))


def test_a_trigger_sees_each_file_once_even_from_racing_watchers(store: Store, path: Path) -> None:
    dep = deployment(store)
    ver = version(store, dep)
    trigger = store.add_trigger(dep.id, ver.id, "/in", "/out")
    with Store(path) as other:  # another process's watcher
        stores = [store, other] * 8
        with ThreadPoolExecutor(16) as pool:
            seen = list(pool.map(lambda s: s.trigger_saw(trigger.id, "in/a.csv"), stores))
    assert seen.count(False) == 1
    assert not store.trigger_saw(trigger.id, "in/b.csv")
    raises(NotFound, "trigger")(lambda: store.trigger_saw("trg-none", "x"))


def test_a_trigger_is_updated_and_deleted_without_its_runs(store: Store) -> None:
    dep = deployment(store)
    first, second = version(store, dep, "1"), version(store, dep, "2")
    trigger = store.add_trigger(dep.id, first.id, "/in", "/out")
    run = store.add_run(dep.id, first.id, ["/in/a"], "/out", trigger_id=trigger.id)
    paused = store.update_trigger(trigger.id, enabled=False, version_id=second.id)
    assert (paused.enabled, paused.version_id) == (False, second.id)
    assert store.triggers(enabled=True) == [] and store.triggers(dep.id) == [paused]
    raises(InvalidInput, "enabled")(lambda: store.update_trigger(trigger.id, enabled="yes"))
    other = version(store, deployment(store, "wine"))
    raises(InvalidInput, "not a version")(lambda: store.update_trigger(trigger.id, version_id=other.id))
    assert store.runs(trigger_id=trigger.id) == [run]
    store.delete_trigger(trigger.id)
    raises(NotFound, "trigger")(lambda: store.trigger(trigger.id))
    assert store.run(run.id).trigger_id is None


# -- concurrency -------------------------------------------------------------------------------------


def test_threads_and_store_objects_add_services_at_once(store: Store, path: Path) -> None:
    dep = deployment(store)
    ver = version(store, dep)
    barrier = threading.Barrier(8)
    with Store(path) as other:

        def add(index: int) -> list[str]:
            target = store if index % 2 else other
            barrier.wait()
            return [target.add_service(dep.id, ver.id).id for _ in range(10)]

        with ThreadPoolExecutor(8) as pool:
            added = [id for ids in pool.map(add, range(8)) for id in ids]
    assert len(set(added)) == 80
    assert {svc.id for svc in store.services(dep.id)} == set(added)
