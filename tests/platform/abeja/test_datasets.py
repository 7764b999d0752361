"""ABEJA's Dataset API over HTTP: items added one at a time and in batches, listed page by page (a
token on every page that has items, ``null`` on the first empty one), changed alone or in bulk (all
or none), deleted, and gone with their dataset; unknown ids answer ABEJA's 404; bodies that are too
large, too deep or not an item are refused before anything is stored, the server's memory staying
flat and its answers quick; the routes take ABEJA's credentials and refuse foreign origins."""

from __future__ import annotations

import json
import socket
import sqlite3
from typing import Any

import httpx
import pytest

from inferd.platform.abeja.datasets import MAX_BATCH, MAX_ITEM_BYTES
from tests.platform.abeja.conftest import TOKEN, Control
from tests.platform.abeja.test_api import basic
from tests.platform.test_archive_bombs import growth

ORG = "/organizations/2345678901234"
MIB = 1024 * 1024


def new_dataset(running: Control, name: str = "pets") -> str:
    made = running.call("POST", f"{ORG}/datasets", json={"name": name, "type": "classification", "props": {}})
    assert made.status_code == 200, made.text
    dataset_id: str = made.json()["dataset_id"]
    return dataset_id


def item(n: int) -> dict[str, Any]:
    return {
        "source_data": [{"data_uri": f"datalake://1230000000000/{n}.jpg", "data_type": "image/jpeg"}],
        "attributes": {"classification": [{"category_id": 1, "label_id": n % 2}]},
    }


def rows(running: Control, dataset_id: str) -> int:
    """The dataset's items as SQLite holds them (what the server wrote)."""
    with sqlite3.connect(running.data / "platform" / "platform.sqlite") as db:
        found: int = db.execute(
            "SELECT COUNT(*) FROM abeja_dataset_items WHERE dataset_id = ?", (dataset_id,)
        ).fetchone()[0]
    return found


def assert_abeja_error(answer: httpx.Response, status: int, word: str) -> None:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["error"] == word and body["error_description"], body


def test_items_are_paged_changed_and_go_with_their_dataset(shared_control: Control) -> None:
    running = shared_control
    dataset = new_dataset(running)
    items = f"{ORG}/datasets/{dataset}/items"
    batch = running.call("POST", items, json=[item(n) for n in range(5)])
    assert batch.status_code == 200, batch.text
    made = batch.json()
    ids = [entry["dataset_item_id"] for entry in made]
    assert ids == sorted(ids) and len(set(ids)) == 5 and all(isinstance(i, int) for i in ids)
    assert made[0]["source_data"] == item(0)["source_data"] and "organization_id" not in made[0]
    single = running.call("POST", items, json=item(5)).json()  # one object: answers one item
    ids.append(single["dataset_item_id"])
    assert running.call("DELETE", f"{items}/{ids[1]}").json()["dataset_item_id"] == ids[1]
    kept = [ids[0], *ids[2:]]

    pages: list[list[int]] = []
    page = running.call("GET", items, params={"limit": 2}).json()
    for _ in range(10):
        assert page["total_count"] == 5
        pages.append([entry["dataset_item_id"] for entry in page["items"]])
        if page["next_page_token"] is None:
            break
        page = running.call("GET", items, params={"next_page_token": page["next_page_token"]}).json()
    assert pages == [kept[0:2], kept[2:4], kept[4:], []]
    token = running.call("GET", items, params={"limit": 1}).json()["next_page_token"]
    larger = running.call("GET", items, params={"next_page_token": token, "limit": 3}).json()
    assert [entry["dataset_item_id"] for entry in larger["items"]] == kept[1:4]

    relabelled = {"classification": [{"category_id": 1, "label_id": 9}]}
    changes = [{"dataset_item_id": i, "attributes": relabelled} for i in kept[:2]]
    bulk = running.call("PUT", items, json=changes)
    assert [entry["attributes"] for entry in bulk.json()] == [relabelled, relabelled], bulk.text
    with_unknown = [
        {"dataset_item_id": kept[2], "attributes": {}},
        {"dataset_item_id": ids[1], "attributes": {}},
    ]
    assert_abeja_error(running.call("PUT", items, json=with_unknown), 404, "not_found")
    assert (
        running.call("GET", f"{items}/{kept[2]}").json()["attributes"] == item(3)["attributes"]
    )  # none changed
    one = running.call("PUT", f"{items}/{kept[2]}", json={"attributes": relabelled}).json()
    assert one["attributes"] == relabelled and one["dataset_item_id"] == kept[2]

    assert running.call("GET", f"{ORG}/datasets/{dataset}").json()["total_count"] == 5
    assert rows(running, dataset) == 5
    deleted = running.call("DELETE", f"{ORG}/datasets/{dataset}")
    assert deleted.json()["dataset_id"] == dataset and deleted.json()["total_count"] == 5
    assert rows(running, dataset) == 0
    assert_abeja_error(running.call("GET", items), 404, "not_found")
    assert dataset not in [d["dataset_id"] for d in running.call("GET", f"{ORG}/datasets").json()]


def test_datasets_are_listed_a_page_at_a_time(shared_control: Control) -> None:
    running = shared_control
    made = sorted(new_dataset(running, f"listed-{n}") for n in range(3))
    everything = [d["dataset_id"] for d in running.call("GET", f"{ORG}/datasets").json()]
    assert everything == sorted(everything) and set(made) <= set(everything)
    first = running.call("GET", f"{ORG}/datasets", params={"max_results": 2}).json()
    assert [d["dataset_id"] for d in first] == everything[:2]
    after = running.call("GET", f"{ORG}/datasets", params={"next_token": first[-1]["dataset_id"]}).json()
    assert [d["dataset_id"] for d in after] == everything[2:]
    for dataset in made:
        assert running.call("DELETE", f"{ORG}/datasets/{dataset}").status_code == 200


@pytest.mark.parametrize(
    "method,path,body,status,word",
    [
        ("GET", "/datasets/1999999999999", None, 404, "not_found"),
        ("DELETE", "/datasets/1999999999999", None, 404, "not_found"),
        ("GET", "/datasets/1999999999999/items", None, 404, "not_found"),
        ("POST", "/datasets/1999999999999/items", item(0), 404, "not_found"),
        ("GET", "/datasets/DATASET/items/123456789", None, 404, "not_found"),
        ("GET", "/datasets/DATASET/items/abc", None, 404, "not_found"),
        ("GET", "/datasets/DATASET/items/99999999999999999999999999", None, 404, "not_found"),
        ("PUT", "/datasets/DATASET/items/123456789", {"attributes": {}}, 404, "not_found"),
        ("DELETE", "/datasets/DATASET/items/-1", None, 404, "not_found"),
        ("POST", "/datasets", {"type": "classification"}, 400, "bad_request"),
        ("POST", "/datasets", {"name": "x", "type": "classification", "props": []}, 400, "bad_request"),
        ("POST", "/datasets/DATASET/items", {"source_data": []}, 400, "bad_request"),
        ("POST", "/datasets/DATASET/items", {"source_data": [{"data_uri": "file:///x"}]}, 400, "bad_request"),
        ("POST", "/datasets/DATASET/items", {**item(0), "attributes": [1]}, 400, "bad_request"),
        ("POST", "/datasets/DATASET/items", "{not json", 400, "bad_request"),
        ("GET", "/datasets/DATASET/items?q=label:cat", None, 400, "bad_request"),
        ("GET", "/datasets/DATASET/items?limit=0", None, 400, "bad_request"),
        ("GET", "/datasets/DATASET/items?next_page_token=forged", None, 400, "bad_request"),
        ("GET", "/datasets?max_results=100000", None, 400, "bad_request"),
    ],
)  # fmt: skip
def test_unknown_ids_and_bad_bodies_answer_abejas_error(
    shared_control: Control, method: str, path: str, body: object, status: int, word: str
) -> None:
    dataset = new_dataset(shared_control, "target")
    content = body if isinstance(body, str) else None if body is None else json.dumps(body)
    answer = shared_control.call(method, ORG + path.replace("DATASET", dataset), content=content)
    assert_abeja_error(answer, status, word)
    assert rows(shared_control, dataset) == 0


def test_large_deep_and_many_items_are_refused_with_memory_flat(shared_control: Control) -> None:
    running = shared_control
    dataset = new_dataset(running, "attacked")
    items = f"{ORG}/datasets/{dataset}/items"
    big = {**item(0), "attributes": {"custom": "x" * (MAX_ITEM_BYTES + 1)}}
    deep = (
        '{"source_data": [{"data_uri": "https://x"}], "attributes": {"a": '
        + "[" * 300_000
        + "]" * 300_000
        + "}}"
    )
    many = [{"source_data": [{"data_uri": "https://x"}]}] * (MAX_BATCH + 1)
    for body, status, word in [
        (json.dumps(big), 413, "payload_too_large"),
        (deep, 400, "bad_request"),
        (json.dumps(many), 400, "bad_request"),
        (json.dumps([item(1), big]), 413, "payload_too_large"),  # all or none: item(1) is not kept
    ]:
        answer, grew, took = growth(running, lambda body=body: running.call("POST", items, content=body))  # type: ignore[misc]
        assert_abeja_error(answer, status, word)
        assert grew < 50 * MIB and took < 5, (grew, took)
    assert rows(running, dataset) == 0

    # a body declared far past the control API's limit is refused before it is read
    def declared() -> bytes:
        with socket.create_connection(("127.0.0.1", running.port), timeout=10) as raw:
            head = (
                f"POST {items} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {1 << 30}\r\n\r\n"
            )
            raw.sendall(head.encode() + b"[" * 4096)
            said = b""
            while len(said) < 65536 and (chunk := raw.recv(65536)):  # it closes the connection
                said += chunk
            return said

    said, grew, took = growth(running, declared)
    assert said.startswith(b"HTTP/1.1 413") and b"INFERD_MAX_API_BODY_SIZE" in said, said[:300]
    assert grew < 50 * MIB and took < 5, (grew, took)
    assert rows(running, dataset) == 0
    assert running.call("POST", items, json=item(2)).status_code == 200  # serving on
    assert rows(running, dataset) == 1


def test_credentials_and_foreign_origins(shared_control: Control) -> None:
    running = shared_control
    dataset = new_dataset(running, "guarded")
    items = f"{ORG}/datasets/{dataset}/items"
    assert running.call("GET", f"{ORG}/datasets", token=None).status_code == 401
    assert running.call("POST", items, token=None, json=item(0)).status_code == 401
    assert running.call("POST", items, token="wrong", json=item(0)).status_code == 401
    wrong_basic = running.call("GET", items, token=None, headers=basic("1234567890123", "wrong"))
    assert wrong_basic.status_code == 401
    by_basic = running.call("GET", items, token=None, headers=basic("1234567890123", TOKEN))
    assert by_basic.status_code == 200, by_basic.text
    foreign = {"origin": "http://evil.example"}
    assert running.call("POST", items, json=item(0), headers=foreign).status_code == 403
    assert (
        running.call("POST", f"{ORG}/datasets", json={"name": "x", "type": "t"}, headers=foreign).status_code
        == 403
    )
    assert running.call("DELETE", f"{ORG}/datasets/{dataset}", headers=foreign).status_code == 403
    assert rows(running, dataset) == 0
    assert running.call("GET", f"{ORG}/datasets/{dataset}").status_code == 200
