"""What a user's script does with the published SDK's dataset client (``abeja.datasets.Client``, of
abeja-sdk 2.3.6), run by the Python of the SDK's venv (tests/platform/abeja/conftest.py) in the
environment ABEJA's SDK reads (``ABEJA_API_URL``, ``ABEJA_ORGANIZATION_ID``, a user id and personal
access token). Prints one JSON object of what it read, for the test to check.

Usage: sdk_datasets.py DATASET_ID
"""

from __future__ import annotations

import json
import sys
from typing import Any

from abeja.datasets import Client  # type: ignore[import-not-found]  # the SDK's venv only
from abeja.exceptions import NotFound  # type: ignore[import-not-found]


def main(dataset_id: str) -> dict[str, Any]:
    client = Client()
    dataset = client.get_dataset(dataset_id)
    seen: dict[str, Any] = {
        "dataset": {
            "dataset_id": dataset.dataset_id,
            "name": dataset.name,
            "type": dataset.type,
            "props": dataset.props,
            "total_count": dataset.total_count,
        },
        "listed": [d.dataset_id for d in client.datasets.list()],
    }
    items = dataset.dataset_items
    listed = list(items.list(limit=2))  # pages of two, until an empty one
    seen["items"] = [
        {"id": i.dataset_item_id, "attributes": i.attributes, "uris": [s.uri for s in i.source_data]}
        for i in listed
    ]
    first = items.get(listed[0].dataset_item_id)
    seen["first_content"] = first.source_data[0].get_content().decode()  # through the DataLake

    made = items.create(
        source_data=[{"data_type": "text/plain", "data_uri": "https://example.com/x.txt"}],
        attributes={"classification": [{"category_id": 1, "label_id": 2, "label": "dog"}]},
    )
    changed = items.update(made.dataset_item_id, {"classification": [{"category_id": 1, "label_id": 1}]})
    seen["made"] = {"id": made.dataset_item_id, "changed": changed.attributes}
    seen["after_create"] = client.get_dataset(dataset_id).total_count
    deleted = items.delete(made.dataset_item_id)
    seen["deleted"] = deleted.dataset_item_id
    try:
        items.get(made.dataset_item_id)
        seen["deleted_item_read"] = "found"
    except NotFound as missing:
        seen["deleted_item_read"] = [missing.status_code, missing.error]
    other = client.datasets.create("made-by-sdk", "detection", {"categories": []})
    seen["sdk_dataset"] = [other.name, other.type, other.organization_id]
    seen["sdk_deleted"] = client.datasets.delete(other.dataset_id).dataset_id == other.dataset_id
    try:
        client.get_dataset("1999999999999")
        seen["unknown_dataset"] = "found"
    except NotFound as missing:
        seen["unknown_dataset"] = [missing.status_code, missing.error]
    return seen


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
