"""ABEJA's DataLake API over HTTP, as the SDK's datalake client calls it: channels made and listed,
files uploaded with their content type and metadata, listed page by page, downloaded through their
presigned URL and deleted; names that would leave a channel's folder, and uploads that break off or
grow too large, which leave nothing behind."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.platform.abeja.conftest import SHARED_UPLOAD_LIMIT as LIMIT
from tests.platform.abeja.conftest import TOKEN, Control
from tests.platform.abeja.test_api import basic

ORG = "/organizations/2345678901234"


@dataclass
class Lake:
    running: Control
    root: Path

    def new_channel(self, name: str = "inputs") -> str:
        made = self.running.call("POST", f"{ORG}/channels", json={"name": name, "storage_type": "datalake"})
        assert made.status_code == 200, made.text
        channel_id: str = made.json()["channel"]["channel_id"]
        return channel_id

    def upload(
        self, channel: str, content: bytes, headers: dict[str, str], query: str = ""
    ) -> httpx.Response:
        return self.running.call(
            "POST", f"/channels/{channel}/upload{query}", content=content, headers=headers
        )


@pytest.fixture(scope="module")
def lake(shared_control: Control) -> Lake:
    return Lake(shared_control, (shared_control.data / "platform" / "datalake").resolve())


def everything_under(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


def test_a_file_uploaded_is_listed_downloaded_and_deleted(lake: Lake) -> None:
    channel = lake.new_channel("uploads")
    assert len(channel) == 13 and (lake.root / channel).is_dir()
    described = lake.running.call("GET", f"{ORG}/channels/{channel}").json()["channel"]
    assert (described["name"], described["storage_type"], described["archived"]) == (
        "uploads",
        "datalake",
        False,
    )
    listed = lake.running.call("GET", f"{ORG}/channels").json()["channels"]
    assert channel in [c["channel_id"] for c in listed]

    headers = {
        "content-type": "application/json",
        "x-abeja-meta-filename": "cat.json",
        "x-abeja-meta-label": quote("chat noir é"),
    }
    uploaded = lake.upload(channel, b'{"name": "cat"}', headers)
    assert uploaded.status_code == 200, uploaded.text
    answer = uploaded.json()
    assert answer["file_id"] == "cat.json" and answer["content_type"] == "application/json"
    assert answer["metadata"] == {
        "x-abeja-meta-filename": "cat.json",
        "x-abeja-meta-label": quote("chat noir é"),
    }
    assert (lake.root / channel / "cat.json").read_bytes() == b'{"name": "cat"}'  # where runs read it

    again = lake.upload(channel, b"{}", headers)
    assert again.status_code == 200 and again.json()["file_id"] not in ("cat.json", "")
    refused = lake.upload(channel, b"{}", headers, "?conflict_target=filename")
    assert refused.status_code == 409 and refused.json()["error"] == "conflict", refused.text

    files = lake.running.call("GET", f"/channels/{channel}").json()
    assert [f["file_id"] for f in files["files"]] == ["cat.json", again.json()["file_id"]]
    assert files["next_page_token"] is None
    info = lake.running.call("GET", f"/channels/{channel}/cat.json").json()
    fetched = httpx.get(info["download_uri"])  # presigned: no credentials, as the CLI fetches it
    assert fetched.status_code == 200 and fetched.content == b'{"name": "cat"}'
    assert fetched.headers["content-type"].startswith("application/json")
    forged = info["download_uri"].replace("cat.json", again.json()["file_id"])
    assert httpx.get(forged).status_code == 401

    relabelled = lake.running.call(
        "PUT", f"/channels/{channel}/cat.json/metadata", json={"x-abeja-meta-label": "dog"}
    )
    assert relabelled.json()["metadata"] == {"x-abeja-meta-label": "dog"}
    assert lake.running.call("GET", f"/channels/{channel}/cat.json").json()["metadata"] == {
        "x-abeja-meta-label": "dog"
    }
    deleted = lake.running.call("DELETE", f"/channels/{channel}/cat.json")
    assert deleted.json() == {"message": "deleted file (cat.json)"}
    assert not (lake.root / channel / "cat.json").exists()
    assert lake.running.call("GET", f"/channels/{channel}/cat.json").json()["error"] == "not_found"


def test_files_put_in_the_folder_are_listed_page_by_page(lake: Lake) -> None:
    (lake.root / "9000000000001").mkdir(parents=True)
    for name in ("a.png", "b.txt", "c.json"):
        (lake.root / "9000000000001" / name).write_bytes(name.encode())
    channels = lake.running.call("GET", f"{ORG}/channels").json()["channels"]
    assert {"channel_id": "9000000000001", "name": "9000000000001"}.items() <= next(
        c for c in channels if c["channel_id"] == "9000000000001"
    ).items()
    seen: list[dict[str, Any]] = []
    page = lake.running.call("GET", "/channels/9000000000001", params={"items_per_page": 2}).json()
    seen += page["files"]
    assert len(page["files"]) == 2 and page["next_page_token"]
    page = lake.running.call(
        "GET", "/channels/9000000000001", params={"next_page_token": page["next_page_token"]}
    )
    seen += page.json()["files"]
    assert page.json()["next_page_token"] is None
    assert {f["file_id"]: f["content_type"] for f in seen} == {
        "a.png": "image/png",
        "b.txt": "text/plain",
        "c.json": "application/json",
    }


def test_names_never_leave_the_channel_folder(lake: Lake) -> None:
    channel = lake.new_channel("hostile")
    outside = lake.root.parent / "outside.txt"
    outside.write_text("secret")
    (lake.root / channel / "link.txt").symlink_to(outside)
    before = everything_under(lake.root)
    for name in ("../../escape.json", "..\\escape.json"):
        stored = lake.upload(channel, b"{}", {"x-abeja-meta-filename": name})
        assert stored.status_code == 200 and stored.json()["file_id"] == "escape.json", stored.text
        assert lake.running.call("DELETE", f"/channels/{channel}/escape.json").status_code == 200
    hidden = lake.upload(channel, b"x", {"x-abeja-meta-filename": ".env", "content-type": "text/plain"})
    assert not hidden.json()["file_id"].startswith(".") and hidden.json()["file_id"].endswith(".txt")
    assert lake.running.call("DELETE", f"/channels/{channel}/{hidden.json()['file_id']}").status_code == 200
    for path in ("/channels/%2E%2E/upload", f"/channels/{channel}/%2E%2E", f"/channels/{channel}/.upload-x"):
        answer = lake.running.call("POST" if path.endswith("upload") else "GET", path, content=b"x")
        assert answer.status_code == 400 and answer.json()["error"] == "bad_request", (path, answer.text)
    assert lake.running.call("GET", f"/channels/{channel}/link.txt").status_code == 404
    assert [f["file_id"] for f in lake.running.call("GET", f"/channels/{channel}").json()["files"]] == []
    assert everything_under(lake.root) == before and outside.read_text() == "secret"
    assert not [path for path in lake.running.data.rglob("*") if path.name in ("escape.json", ".env")]


def test_an_upload_that_breaks_off_or_is_too_large_leaves_nothing(lake: Lake) -> None:
    channel = lake.new_channel("partial")
    folder = lake.root / channel

    def chunks() -> Iterator[bytes]:
        for _ in range(LIMIT // 1024 + 8):
            yield b"x" * 1024

    too_large = lake.upload(channel, chunks(), {"x-abeja-meta-filename": "big.bin"})  # type: ignore[arg-type]
    assert too_large.status_code == 413 and too_large.json()["error"] == "payload_too_large", too_large.text
    declared = lake.upload(channel, b"x" * (LIMIT + 1), {"x-abeja-meta-filename": "big.bin"})
    assert declared.status_code == 413
    assert os.listdir(folder) == []

    with socket.create_connection(("127.0.0.1", lake.running.port)) as raw:
        head = (
            f"POST /channels/{channel}/upload HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {TOKEN}\r\nx-abeja-meta-filename: cut.bin\r\nContent-Length: 4096\r\n\r\n"
        )
        raw.sendall(head.encode() + b"y" * 1000)
        deadline = time.monotonic() + 10
        while not os.listdir(folder):  # the partial file appears while the body arrives
            assert time.monotonic() < deadline, "the upload never started"
            time.sleep(0.02)
    deadline = time.monotonic() + 10
    while os.listdir(folder):
        assert time.monotonic() < deadline, os.listdir(folder)
        time.sleep(0.05)
    assert lake.running.call("GET", f"/channels/{channel}").json()["files"] == []


def test_credentials_and_bad_requests(lake: Lake) -> None:
    channel = lake.new_channel("guarded")
    assert lake.running.call("GET", f"/channels/{channel}", token=None).status_code == 401
    assert lake.upload(channel, b"x", {"authorization": "Bearer wrong"}).status_code == 401
    by_basic = lake.running.call(
        "GET", f"/channels/{channel}", token=None, headers=basic("1234567890123", TOKEN)
    )
    assert by_basic.status_code == 200, by_basic.text
    foreign = lake.upload(channel, b"x", {"origin": "http://evil.example"})
    assert foreign.status_code == 403 and os.listdir(lake.root / channel) == []
    for method, path, body, status in [
        ("GET", f"{ORG}/channels/1999999999999", None, 404),
        ("GET", "/channels/1999999999999", None, 404),
        ("POST", "/channels/1999999999999/upload", b"x", 404),
        ("POST", f"{ORG}/channels", json.dumps({"storage_type": "file"}).encode(), 400),
        ("GET", f"/channels/{channel}?sort=size", None, 400),
        ("GET", f"/channels/{channel}?next_page_token=forged", None, 400),
        ("PUT", f"/channels/{channel}/any.json/metadata", b"{not json", 400),
    ]:
        answer = lake.running.call(method, path, content=body)
        assert answer.status_code == status and "error_description" in answer.json(), (path, answer.text)
    archived = lake.running.call("POST", f"{ORG}/channels/{channel}/archive").json()["channel"]
    assert archived["archived"] is True
    listed = lake.running.call("GET", f"{ORG}/channels").json()["channels"]
    assert channel not in [c["channel_id"] for c in listed]
    included = lake.running.call("GET", f"{ORG}/channels", params={"filter_archived": "include_archived"})
    assert channel in [c["channel_id"] for c in included.json()["channels"]]
