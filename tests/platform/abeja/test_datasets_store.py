"""Datasets and items in the platform's SQLite file: kept when the control process opens the file
again, in tables beside the store's that leave its schema version alone; items numbered once (a
deleted item's number is not given again), and a batch stored whole or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferd.core.errors import NotFound
from inferd.platform.abeja.datasets_store import DatasetStore, NewItem, item_number
from inferd.platform.store import Store

URI = [{"data_uri": "datalake://1230000000000/cat.jpg", "data_type": "image/jpeg", "width": 3}]


def test_items_outlive_a_restart_beside_the_stores_tables(tmp_path: Path) -> None:
    path = tmp_path / "platform.sqlite"
    with Store(path) as store:
        version = store.schema_version
        store.create_deployment("kept")
    datasets = DatasetStore(path)
    dataset = datasets.create("pets", "classification", {"categories": []})
    first, second = datasets.add_items(
        dataset.dataset_id, [NewItem(URI, {"classification": [{"label": "猫"}]}), NewItem(URI, {})]
    )
    datasets.delete_item(dataset.dataset_id, second.item_id)
    datasets.close()

    with Store(path) as store:  # the store opens the file as before, its own records intact
        assert store.schema_version == version and [d.name for d in store.deployments()] == ["kept"]
    again = DatasetStore(path)
    try:
        kept = again.dataset(dataset.dataset_id)
        assert (kept.name, kept.type, kept.props, kept.total_count) == (
            "pets",
            "classification",
            {"categories": []},
            1,
        )
        item = again.item(dataset.dataset_id, first.item_id)
        assert item.source_data == URI and item.attributes == {"classification": [{"label": "猫"}]}
        (third,) = again.add_items(dataset.dataset_id, [NewItem(URI, {})])
        assert third.item_id > second.item_id  # never a deleted item's number again
        with pytest.raises(NotFound):
            again.set_attributes(dataset.dataset_id, [(first.item_id, {"x": 1}), (second.item_id, {})])
        assert again.item(dataset.dataset_id, first.item_id).attributes == item.attributes  # none changed
        again.delete(dataset.dataset_id)
        assert again.items(dataset.dataset_id, 0, 10) == []
        with pytest.raises(NotFound):
            again.add_items(dataset.dataset_id, [NewItem(URI, {})])
    finally:
        again.close()


@pytest.mark.parametrize("raw", ["", "-1", "1.5", "٣", "9" * 20, str(2**63)])
def test_an_item_number_sqlite_cannot_hold_names_no_item(raw: str) -> None:
    with pytest.raises(NotFound):
        item_number(raw)
