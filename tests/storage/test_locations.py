"""Telling URIs from local paths, and local paths through the cache (returned as they are)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferd.storage import ModelCache, StorageError, is_remote, local_path
from inferd.storage.errors import StorageNotFound
from inferd.storage.locations import plain_target


@pytest.mark.parametrize(
    "text",
    ["s3://bucket/model.onnx", "gs://b/m", "gcs://b/m", "https://host/m.onnx", "http://h/x", "foo://x"],
)
def test_any_scheme_but_file_is_remote(text: str) -> None:
    assert is_remote(text)
    assert local_path(text) is None


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("models/iris.onnx", Path("models/iris.onnx")),
        ("/abs/iris.onnx", Path("/abs/iris.onnx")),
        ("file:///abs/my%20model.onnx", Path("/abs/my model.onnx")),
        ("file://localhost/abs/m.onnx", Path("/abs/m.onnx")),
        ("FILE://relative/m.onnx", Path("relative/m.onnx")),
        ("C:\\models\\m.onnx", Path("C:\\models\\m.onnx")),
    ],
)
def test_plain_paths_and_file_uris_are_local(text: str, path: Path) -> None:
    assert not is_remote(text)
    assert local_path(text) == path


@pytest.mark.parametrize(
    ("target", "plain"),
    [
        ("file:///abs/examples/iris", "/abs/examples/iris"),
        ("file:///abs/my%20model.py:Iris", "/abs/my model.py:Iris"),
        ("file://localhost/abs/model.py", "/abs/model.py"),
        ("examples/iris/model.py:Iris", "examples/iris/model.py:Iris"),
        ("s3://bucket/model.py:Iris", "s3://bucket/model.py:Iris"),
    ],
)
def test_a_file_uri_target_is_written_as_its_path(target: str, plain: str) -> None:
    assert plain_target(target) == plain


def test_a_local_file_or_folder_is_returned_as_it_is(tmp_path: Path, cache: ModelCache) -> None:
    (tmp_path / "model.onnx").write_bytes(b"onnx")
    for uri in (str(tmp_path / "model.onnx"), (tmp_path / "model.onnx").as_uri(), str(tmp_path)):
        fetched = cache.fetch(uri)
        assert fetched.path == local_path(uri)
        assert (fetched.uri, fetched.version, fetched.from_cache) == (uri, None, True)
    assert not cache.root.exists()  # nothing was cached, not even the cache folder made


def test_a_missing_local_path_names_it(tmp_path: Path, cache: ModelCache) -> None:
    uri = (tmp_path / "nope.onnx").as_uri()
    with pytest.raises(StorageNotFound, match=f"cannot fetch {uri}: no such file or folder"):
        cache.fetch(uri)


def test_an_unknown_scheme_is_an_error_naming_the_uri(cache: ModelCache) -> None:
    with pytest.raises(StorageError, match=r"cannot fetch ftp://host/m.onnx: unknown scheme 'ftp://'"):
        cache.fetch("ftp://host/m.onnx")
