"""http(s):// URIs against a local HTTP server that counts its GETs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from inferd.protocols.status import status_of
from inferd.storage import ModelCache, StorageError
from inferd.storage.errors import IncompleteDownload, StorageDenied, StorageNotFound, StorageUnreachable
from tests.servers import free_port
from tests.storage.files_server import FileServer


def cache_contents(root: Path) -> list[str]:
    """Every file under entries/ and tmp/ (what a failed fetch must not leave)."""
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if "locks" not in path.parts)


def test_a_file_is_downloaded_once_then_found_in_the_cache(files: FileServer, cache: ModelCache) -> None:
    url = files.put("/models/iris.onnx", b"onnx bytes")
    first = cache.fetch(url)
    assert first.path.name == "iris.onnx"
    assert first.path.read_bytes() == b"onnx bytes"
    assert (first.uri, first.from_cache) == (url, False)
    assert first.version and first.version.strip('"')  # the ETag

    again = ModelCache(cache.root, 10**9).fetch(url)  # another worker, say
    assert (again.path, again.version, again.from_cache) == (first.path, first.version, True)
    assert files.gets["/models/iris.onnx"] == 1


def test_a_changed_file_gets_a_new_entry(files: FileServer, cache: ModelCache) -> None:
    url = files.put("/m.onnx", b"version one")
    old = cache.fetch(url)
    files.put("/m.onnx", b"version two!")
    new = cache.fetch(url)
    assert new.version != old.version
    assert not new.from_cache
    assert new.path.read_bytes() == b"version two!"
    assert old.path.read_bytes() == b"version one"  # still there for whoever uses it
    assert files.gets["/m.onnx"] == 2


def test_without_an_etag_last_modified_and_length_are_the_version(
    files: FileServer, cache: ModelCache
) -> None:
    url = files.put("/m.onnx", b"one", etag=False)
    old = cache.fetch(url)
    assert old.version == "Wed, 25 Nov 2026 10:00:00 GMT 3"
    files.put("/m.onnx", b"three", etag=False)
    assert cache.fetch(url).version == "Wed, 25 Nov 2026 10:00:00 GMT 5"


def test_a_truncated_response_is_an_error_and_leaves_nothing(files: FileServer, cache: ModelCache) -> None:
    url = files.put("/cut.onnx", b"x" * 5000, truncated=True)
    with pytest.raises(IncompleteDownload, match=f"cannot fetch {re.escape(url)}: .*try again"):
        cache.fetch(url)
    assert cache_contents(cache.root) == ["entries", "tmp"]


def test_a_missing_file_names_the_uri(files: FileServer, cache: ModelCache) -> None:
    url = f"{files.url}/nope.onnx"
    with pytest.raises(StorageNotFound, match=f"cannot fetch {re.escape(url)}: .*404"):
        cache.fetch(url)


def test_an_http_folder_is_refused_before_any_request(files: FileServer, cache: ModelCache) -> None:
    with pytest.raises(StorageError, match="names one file, not a folder"):
        cache.fetch(f"{files.url}/models/")
    assert not files.gets


def test_a_refused_connection_is_unreachable(cache: ModelCache) -> None:
    url = f"http://127.0.0.1:{free_port()}/m.onnx"
    with pytest.raises(StorageUnreachable, match=f"cannot fetch {re.escape(url)}: cannot connect"):
        cache.fetch(url)


def test_each_failure_of_the_store_has_the_status_its_cause_deserves(
    files: FileServer, cache: ModelCache
) -> None:
    """Missing 404, refused 403, a store that fails (5xx) or does not answer 502, a URI's query string
    (a pre-signed URL's signature) never in the message."""
    secret = "X-Amz-Signature=feedbeef0123"
    url = files.put("/m.onnx", b"model")
    files.failing = 503
    with pytest.raises(
        StorageUnreachable, match=f"cannot fetch {re.escape(url)}: the server answers 503"
    ) as down:
        cache.fetch(f"{url}?{secret}")
    files.failing = 0
    files.refuse = True
    with pytest.raises(StorageDenied) as denied:
        cache.fetch(f"{url}?{secret}")
    files.refuse = False
    with pytest.raises(StorageNotFound) as missing:
        cache.fetch(f"{files.url}/nope.onnx")
    closed = f"http://127.0.0.1:{free_port()}/m.onnx?{secret}"
    with pytest.raises(StorageUnreachable) as unreachable:
        cache.fetch(closed)
    statuses = [status_of(found.value).http for found in (down, denied, missing, unreachable)]
    assert statuses == [502, 403, 404, 502]
    for found in (down, denied, unreachable):
        assert secret not in str(found.value) and "feedbeef0123" not in str(found.value)


def test_a_uri_refetched_at_a_new_version_lets_its_old_version_go(files: FileServer, tmp_path: Path) -> None:
    """A polled model that changed: this process holds its new version only, so the old one is evicted
    when the cache needs room."""
    cache = ModelCache(tmp_path / "cache", max_bytes=250)
    uri = files.put("/model.onnx", b"a" * 100)
    cache.fetch(uri)
    files.put("/model.onnx", b"b" * 100)
    cache.fetch(uri)
    cache.fetch(files.put("/other.onnx", b"c" * 100))  # over the limit: the old version goes
    contents = sorted(path.read_bytes()[:1] for path in (tmp_path / "cache" / "entries").rglob("*.onnx"))
    assert contents == [b"b", b"c"]
    cache.close()
