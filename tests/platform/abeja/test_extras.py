"""What the ABEJA API keeps beside the records: a version stored under the id answered before its
upload, and side rows that go with their record."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferd.core.errors import Conflict, InvalidInput
from inferd.platform.abeja.extras import Extras, ServiceExtras, VersionExtras
from inferd.platform.records import new_id
from inferd.platform.store import Store

DIGEST = "sha256:" + "cd" * 32


def test_a_version_takes_the_id_it_was_answered(tmp_path: Path) -> None:
    with Store(tmp_path / "p.sqlite") as store:
        dep = store.create_deployment("abeja")
        chosen = new_id("version")
        assert store.add_version(dep.id, "0.0.1", DIGEST, 1, id=chosen).id == chosen
        with pytest.raises(Conflict):
            store.add_version(dep.id, "0.0.2", DIGEST, 1, id=chosen)
        with pytest.raises(InvalidInput, match="ver-"):
            store.add_version(dep.id, "0.0.3", DIGEST, 1, id="1234567890123")


def test_side_rows_go_with_their_records(tmp_path: Path) -> None:
    with Store(tmp_path / "p.sqlite") as store:
        extras = Extras(store.path)
        dep = store.create_deployment("abeja")
        version = store.add_version(dep.id, "0.0.1", DIGEST, 1, "main:handler", "abeja")
        service = store.add_service(dep.id, version.id)
        extras.set_default_environment(dep.id, {"A": "1"})
        extras.set_version(version.id, VersionExtras("img:1", "main:handler", {"P": "2"}))
        extras.set_service(service.id, ServiceExtras("cpu-1", 2, True, {"E": "3"}))
        assert extras.version(version.id) == VersionExtras("img:1", "main:handler", {"P": "2"})
        assert extras.service(service.id) == ServiceExtras("cpu-1", 2, True, {"E": "3"})
        store.update_service(service.id, state="stopped")
        store.delete_service(service.id)
        store.delete_version(version.id)
        store.delete_deployment(dep.id)
        assert extras.service(service.id) is None and extras.version(version.id) is None
        assert extras.default_environment(dep.id) == {}
        extras.close()
