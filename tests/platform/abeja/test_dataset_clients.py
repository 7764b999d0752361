"""``abeja dataset ...`` of the published abejacli 2.2.8, and the published SDK's dataset client
(abeja-sdk 2.3.6, in its own venv), against a control process: files uploaded to a DataLake channel
with ``label``/``label_id`` metadata become a dataset's items through ``import-from-datalake``; the
items are described, created, updated and deleted with the CLI; the SDK reads the dataset, lists
its items page by page, reads an item's file back through the DataLake, and creates, updates and
deletes an item; unknown ids are ABEJA's 404."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.platform.abeja.conftest import TOKEN, Control
from tests.platform.abeja.test_cli import COLOURS, Abeja

PROPS = {
    "categories": [
        {
            "category_id": 1,
            "name": "pets",
            "labels": [{"label_id": 1, "label": "cat"}, {"label_id": 2, "label": "dog"}],
        }
    ]
}
SDK_SCRIPT = Path(__file__).with_name("sdk_datasets.py")


def dataset_json(abeja: Abeja, *args: str, cwd: Path | None = None) -> Any:
    """The JSON a command prints (``import-from-datalake`` prints its progress before it)."""
    said = COLOURS.sub("", abeja.run(*args, cwd=cwd, group="dataset").stdout)
    return json.loads(said[min(i for i in (said.find("{"), said.find("[")) if i >= 0) :])


def test_abeja_dataset_commands_and_the_sdk(
    abeja_cli: Path, abeja_sdk: Path, shared_control: Control, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    files = tmp_path / "files"
    files.mkdir()
    with Abeja(abeja_cli, shared_control, home) as abeja:
        channel = abeja.datalake("create-channel", "-n", "pets")["channel"]["channel_id"]
        for name, label, label_id in (("a.txt", "cat", "1"), ("b.txt", "dog", "2"), ("c.txt", "cat", "1")):
            (files / name).write_text(f"picture of a {label} ({name})")
            metadata = ("-m", f"label:{label}", "-m", f"label_id:{label_id}")
            abeja.run("upload", "-c", channel, str(files / name), *metadata, group="datalake")

        (home / "props.json").write_text(json.dumps(PROPS))
        made = dataset_json(abeja, "create-dataset", "-n", "pets", "-t", "classification", "-p", "props.json")
        dataset = made["dataset_id"]
        assert (made["name"], made["type"], made["props"], made["total_count"]) == (
            "pets",
            "classification",
            PROPS,
            0,
        )

        imported = dataset_json(abeja, "import-from-datalake", "-c", channel, "-d", dataset)
        assert imported == {
            "result": "success",
            "dataset_items": 3,
            "dataset_id": dataset,
            "channel_id": channel,
        }
        described = dataset_json(abeja, "describe-dataset-items", "-d", dataset)
        assert described["total_count"] == 3
        by_file = {
            item["source_data"][0]["data_uri"]: item["attributes"]["classification"][0]
            for item in described["items"]
        }
        assert by_file == {
            f"datalake://{channel}/a.txt": {"category_id": 1, "label": "cat", "label_id": "1"},
            f"datalake://{channel}/b.txt": {"category_id": 1, "label": "dog", "label_id": "2"},
            f"datalake://{channel}/c.txt": {"category_id": 1, "label": "cat", "label_id": "1"},
        }
        assert {item["source_data"][0]["data_type"] for item in described["items"]} == {"text/plain"}

        listed = dataset_json(abeja, "describe-datasets")
        assert [(d["dataset_id"], d["total_count"]) for d in listed if d["dataset_id"] == dataset] == [
            (dataset, 3)
        ]
        assert dataset_json(abeja, "describe-datasets", "-d", dataset)["name"] == "pets"

        item = {
            "source_data": [
                {
                    "data_type": "text/plain",
                    "data_uri": f"datalake://{channel}/a.txt",
                    "height": 5,
                    "width": 7,
                }
            ],
            "attributes": {"classification": [{"category_id": 1, "label_id": 2}]},
        }
        (home / "item.json").write_text(json.dumps(item))
        created = dataset_json(abeja, "create-dataset-item", "-d", dataset, "-p", "item.json")
        item_id = str(created["dataset_item_id"])
        assert created["source_data"] == item["source_data"] and created["attributes"] == item["attributes"]
        (home / "change.yaml").write_text(
            "attributes:\n  classification:\n  - {category_id: 1, label_id: 1}\n"
        )
        updated = dataset_json(
            abeja, "update-dataset-item", "-d", dataset, "-i", item_id, "-p", "change.yaml"
        )
        assert updated["attributes"] == {"classification": [{"category_id": 1, "label_id": 1}]}
        one = dataset_json(abeja, "describe-dataset-items", "-d", dataset, "-i", item_id)
        assert one["attributes"] == updated["attributes"] and one["dataset_item_id"] == int(item_id)
        assert dataset_json(abeja, "delete-dataset-item", "-d", dataset, "-i", item_id)[
            "dataset_item_id"
        ] == int(item_id)
        gone = abeja.run("describe-dataset-items", "-d", dataset, "-i", item_id, group="dataset", ok=False)
        assert gone.returncode != 0 and "404" in gone.stdout + gone.stderr

        read = sdk(abeja_sdk, shared_control, tmp_path, dataset)
        assert read["dataset"] == {
            "dataset_id": dataset,
            "name": "pets",
            "type": "classification",
            "props": PROPS,
            "total_count": 3,
        }
        assert dataset in read["listed"]
        assert sorted(uri for i in read["items"] for uri in i["uris"]) == sorted(by_file)
        assert len({i["id"] for i in read["items"]}) == 3  # each once, across pages of two
        assert read["first_content"].startswith("picture of a ")
        assert read["made"]["changed"] == {"classification": [{"category_id": 1, "label_id": 1}]}
        assert read["after_create"] == 4
        assert read["deleted"] == read["made"]["id"]
        assert read["deleted_item_read"] == [404, "not_found"]
        assert read["unknown_dataset"] == [404, "not_found"]
        assert read["sdk_dataset"] == ["made-by-sdk", "detection", "2345678901234"] and read["sdk_deleted"]

        deleted = dataset_json(abeja, "delete-dataset", "-d", dataset)
        assert deleted["dataset_id"] == dataset
        missing = abeja.run("describe-datasets", "-d", dataset, group="dataset", ok=False)
        assert missing.returncode != 0


def sdk(python: Path, running: Control, tmp_path: Path, dataset: str) -> Any:
    """sdk_datasets.py by the SDK's Python, with what a user of the SDK sets."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "ABEJA_API_URL": running.api,
        "ABEJA_ORGANIZATION_ID": "2345678901234",
        "ABEJA_PLATFORM_USER_ID": "1234567890123",
        "ABEJA_PLATFORM_PERSONAL_ACCESS_TOKEN": TOKEN,
        "ABEJA_STORAGE_DIR_PATH": str(tmp_path / "sdk-cache"),
        "NO_PROXY": "*",
        "LANG": "C.UTF-8",
    }
    done = subprocess.run(
        [str(python), "-I", str(SDK_SCRIPT), dataset], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)
