"""s3:// against moto's S3 API server on loopback, found through AWS_ENDPOINT_URL as boto3 finds it."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from inferd.storage import ModelCache, StorageError
from inferd.storage.errors import StorageDenied, StorageNotFound, StorageUnreachable
from tests.servers import free_port
from tests.storage.conftest import Bucket, without_credentials

SAVED_MODEL = {
    "saved_model.pb": b"graph",
    "variables/variables.index": b"index",
    "variables/variables.data-00000-of-00001": b"weights" * 100,
    "assets/vocab.txt": b"a\nb\n",
}


def put_tree(bucket: Bucket, prefix: str, tree: dict[str, bytes]) -> str:
    for relative, body in tree.items():
        bucket.put(f"{prefix}/{relative}", body)
    return f"s3://{bucket.name}/{prefix}"


def tree_of(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()
    }


def test_an_object_is_downloaded_with_its_etag(bucket: Bucket, cache: ModelCache) -> None:
    uri = bucket.put("iris/iris.onnx", b"onnx bytes")
    fetched = cache.fetch(uri)
    assert fetched.path.name == "iris.onnx"
    assert fetched.path.read_bytes() == b"onnx bytes"
    head = bucket.client.head_object(Bucket=bucket.name, Key="iris/iris.onnx")
    assert fetched.version == head["ETag"].strip('"')
    assert not fetched.from_cache
    assert cache.fetch(uri).from_cache


def test_a_versioned_bucket_adds_the_version_id(bucket: Bucket, cache: ModelCache) -> None:
    bucket.client.put_bucket_versioning(Bucket=bucket.name, VersioningConfiguration={"Status": "Enabled"})
    uri = bucket.put("m.onnx", b"onnx")
    head = bucket.client.head_object(Bucket=bucket.name, Key="m.onnx")
    assert cache.fetch(uri).version == f"{head['ETag'].strip(chr(34))}:{head['VersionId']}"


def test_a_prefix_is_a_folder_with_its_subfolders(bucket: Bucket, cache: ModelCache) -> None:
    uri = put_tree(bucket, "tf/half_plus_two", SAVED_MODEL)
    bucket.put("tf/half_plus_two_v2/saved_model.pb", b"a neighbour sharing the prefix's name")
    for spelled in (uri, f"{uri}/"):
        fetched = cache.fetch(spelled)
        assert fetched.path.name == "half_plus_two"
        assert tree_of(fetched.path) == SAVED_MODEL


def test_a_changed_object_in_a_folder_gives_a_new_version(bucket: Bucket, cache: ModelCache) -> None:
    uri = put_tree(bucket, "model", SAVED_MODEL)
    old = cache.fetch(uri)
    bucket.put("model/variables/variables.index", b"retrained")
    new = cache.fetch(uri)
    assert new.version != old.version and not new.from_cache
    assert tree_of(new.path)["variables/variables.index"] == b"retrained"
    assert tree_of(old.path) == SAVED_MODEL


def test_a_missing_object_names_the_uri(bucket: Bucket, cache: ModelCache) -> None:
    uri = f"s3://{bucket.name}/nope.onnx"
    with pytest.raises(StorageNotFound, match=f"cannot fetch {uri}: no such object or prefix"):
        cache.fetch(uri)


def test_a_missing_bucket_names_the_uri(bucket: Bucket, cache: ModelCache) -> None:
    with pytest.raises(StorageNotFound, match=r"cannot fetch s3://no-such-bucket-here/m\.onnx: "):
        cache.fetch("s3://no-such-bucket-here/m.onnx")


def test_an_empty_prefix_is_missing(bucket: Bucket, cache: ModelCache) -> None:
    bucket.put("empty/", b"")  # a folder marker, as consoles make them, and nothing under it
    uri = f"s3://{bucket.name}/empty/"
    with pytest.raises(StorageNotFound, match=f"cannot fetch {uri}: "):
        cache.fetch(uri)


def test_no_credentials_says_how_to_give_them(
    bucket: Bucket, cache: ModelCache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = bucket.put("m.onnx", b"onnx")
    without_credentials(monkeypatch, tmp_path / "none")
    with pytest.raises(StorageDenied, match=f"cannot fetch {uri}: no AWS credentials found; set AWS_"):
        cache.fetch(uri)


def test_an_unreachable_endpoint_fails_within_seconds(
    bucket: Bucket, cache: ModelCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    uri = f"s3://{bucket.name}/m.onnx"
    began = time.monotonic()
    with pytest.raises(StorageUnreachable, match=f"cannot fetch {re.escape(uri)}: .*AWS_ENDPOINT_URL"):
        cache.fetch(uri)
    assert time.monotonic() - began < 5


def test_a_key_that_would_write_outside_the_folder_is_refused(bucket: Bucket, cache: ModelCache) -> None:
    bucket.put("model/../../escape.txt", b"x")
    with pytest.raises(StorageError, match=re.escape("'../../escape.txt' cannot be stored as a local file")):
        cache.fetch(f"s3://{bucket.name}/model")
    assert not list(cache.root.glob("entries/*"))


def test_an_object_spelled_as_a_folder_is_an_empty_prefix(bucket: Bucket, cache: ModelCache) -> None:
    uri = bucket.put("m.onnx", b"onnx") + "/"
    with pytest.raises(StorageNotFound, match=f"cannot fetch {uri}: the prefix holds no objects"):
        cache.fetch(uri)


def test_a_uri_without_a_bucket_says_so(cache: ModelCache) -> None:
    with pytest.raises(StorageError, match=r"cannot fetch s3:///m\.onnx: the URI names no bucket or host"):
        cache.fetch("s3:///m.onnx")
