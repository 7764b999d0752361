"""gs:// through gcsfs pointed (by STORAGE_EMULATOR_HOST, anonymously) at loopback: no GCS emulator
is installed here, so the local file server answers the two JSON API calls of fetching one object
(its metadata, its media) as GCS would, and otherwise tests how gcsfs's failures reach the user."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from pathlib import Path

import fsspec.config
import pytest

from inferd.storage import ModelCache
from inferd.storage.errors import StorageDenied, StorageNotFound, StorageUnreachable
from tests.servers import free_port
from tests.storage.files_server import FileServer

URI = "gs://bucket/model.onnx"


@pytest.fixture(autouse=True)
def anonymous(monkeypatch: pytest.MonkeyPatch) -> None:
    """What FSSPEC_GCS_TOKEN=anon sets: gcsfs then looks for no Google credentials."""
    monkeypatch.setitem(fsspec.config.conf, "gcs", {"token": "anon"})


def put_object(files: FileServer, key: str, body: bytes, generation: int) -> str:
    """Serve ``body`` as gs://bucket/``key`` to gcsfs; its MD5 as GCS gives it."""
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    meta = {
        "name": key,
        "bucket": "bucket",
        "size": str(len(body)),
        "generation": str(generation),
        "md5Hash": md5,
    }
    files.put(f"/storage/v1/b/bucket/o/{key}", json.dumps(meta).encode())
    files.put(f"/download/storage/v1/b/bucket/o/{key}?alt=media", body)
    return md5


def test_an_object_is_downloaded_with_its_generation_and_md5(
    files: FileServer, cache: ModelCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", files.url)
    md5 = put_object(files, "model.onnx", b"onnx bytes", generation=7)
    fetched = cache.fetch(URI)
    assert (fetched.path.name, fetched.path.read_bytes()) == ("model.onnx", b"onnx bytes")
    assert (fetched.version, fetched.from_cache) == (f"7:{md5}", False)
    put_object(files, "model.onnx", b"onnx bytes", generation=8)  # rewritten: a new generation
    assert not cache.fetch(URI).from_cache
    assert files.gets["/download/storage/v1/b/bucket/o/model.onnx?alt=media"] == 2


def test_an_unreachable_store_fails_within_the_check_deadline(
    cache_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"127.0.0.1:{free_port()}")
    began = time.monotonic()
    with pytest.raises(
        StorageUnreachable, match=r"cannot fetch gs://bucket/model\.onnx: no answer within 1\.5 s"
    ):
        ModelCache(cache_root, 10**9, check_seconds=1.5).fetch(URI)
    assert time.monotonic() - began < 4


def test_a_missing_object_names_the_uri(
    files: FileServer, cache: ModelCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", files.url)  # a server that knows no such object
    with pytest.raises(StorageNotFound, match=r"cannot fetch gs://bucket/model\.onnx: no such object"):
        cache.fetch(URI)


def test_a_refusal_is_access_denied(
    files: FileServer, cache: ModelCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", files.url)
    files.refuse = True
    with pytest.raises(
        StorageDenied, match=r"cannot fetch gs://bucket/model\.onnx: access refused .*CREDENTIALS"
    ):
        cache.fetch(URI)
