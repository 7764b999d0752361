"""Uploads to s3:// against moto's S3 API server on loopback: a folder's files under a prefix, and
the errors of a missing bucket, no credentials and an unreachable endpoint, each naming the URI; and
to an http(s) location on a loopback server taking PUTs: each file at the location's path + its
own, the location's query string sent but never shown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from inferd.storage.errors import StorageDenied, StorageError, StorageNotFound, StorageUnreachable
from inferd.storage.upload import check_prefix, upload
from tests.servers import free_port
from tests.storage.conftest import Bucket, without_credentials
from tests.storage.files_server import FileServer


def answers(folder: Path) -> Path:
    (folder / "sub").mkdir(parents=True)
    (folder / "a.json").write_bytes(b'{"a": 1}')
    (folder / "sub" / "b.bin").write_bytes(b"\x00\x01")
    return folder


def test_a_folder_is_uploaded_under_the_prefix(bucket: Bucket, tmp_path: Path) -> None:
    written = upload(answers(tmp_path / "out"), f"s3://{bucket.name}/runs/1")
    prefix = f"s3://{bucket.name}/runs/1/"
    assert written == [prefix + "a.json", prefix + "sub/b.bin"]
    listed = bucket.client.list_objects_v2(Bucket=bucket.name, Prefix="runs/1/")["Contents"]
    assert sorted(item["Key"] for item in listed) == ["runs/1/a.json", "runs/1/sub/b.bin"]
    body = bucket.client.get_object(Bucket=bucket.name, Key="runs/1/sub/b.bin")["Body"].read()
    assert body == b"\x00\x01"


def test_a_missing_bucket_names_the_uri(bucket: Bucket, tmp_path: Path) -> None:
    uri = f"s3://{bucket.name}-missing/out/a.json"
    with pytest.raises(StorageNotFound, match=f"cannot write {re.escape(uri)}: no such bucket"):
        upload(answers(tmp_path / "out"), f"s3://{bucket.name}-missing/out/")


def test_no_credentials_and_no_answer_are_said(
    bucket: Bucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = answers(tmp_path / "out")
    uri = f"s3://{bucket.name}/out/a.json"
    with monkeypatch.context() as changed:
        without_credentials(changed, tmp_path / "none")
        with pytest.raises(StorageDenied, match=f"cannot write {re.escape(uri)}: no AWS credentials"):
            upload(folder, f"s3://{bucket.name}/out/")
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(StorageUnreachable, match=f"cannot write {re.escape(uri)}: .*AWS_ENDPOINT_URL"):
        upload(folder, f"s3://{bucket.name}/out/")
    assert "Contents" not in bucket.client.list_objects_v2(Bucket=bucket.name)


def test_stores_of_folders_and_http_locations_take_uploads() -> None:
    assert check_prefix("s3://bucket/out") == "s3://bucket/out/"
    assert check_prefix("https://example.com/dav/out?sig=1") == "https://example.com/dav/out/?sig=1"
    with pytest.raises(StorageError, match="no bucket"):
        check_prefix("s3:///out/")
    with pytest.raises(StorageError, match="no host"):
        check_prefix("https:///out/")
    with pytest.raises(StorageError, match="unknown scheme"):
        check_prefix("ftp://host/out/")


def test_an_http_location_takes_each_file_by_put(files: FileServer, tmp_path: Path) -> None:
    folder = answers(tmp_path / "out")
    (folder / "two words.json").write_bytes(b"{}")
    secret = "X-Amz-Signature=5ecret5ecret"
    written = upload(folder, f"{files.url}/dav/runs/1?{secret}")
    base = f"{files.url}/dav/runs/1/"
    assert written == [base + "a.json", base + "sub/b.bin", base + "two%20words.json"]
    assert files.puts == [
        ("/dav/runs/1/a.json", secret, 8),
        ("/dav/runs/1/sub/b.bin", secret, 2),
        ("/dav/runs/1/two%20words.json", secret, 2),
    ]
    assert files.files["/dav/runs/1/sub/b.bin"].body == b"\x00\x01"

    failures = [
        ("refuse", True, StorageDenied, "the server answers 403"),
        ("failing", 503, StorageUnreachable, "the server answers 503"),
    ]
    for name, value, error, said in failures:
        setattr(files, name, value)
        with pytest.raises(error) as failed:
            upload(folder, f"{files.url}/dav/runs/2/?{secret}")
        setattr(files, name, type(value)())
        assert str(failed.value).startswith(f"cannot write {files.url}/dav/runs/2/a.json: {said}")
        assert "5ecret" not in str(failed.value)
    missing = f"{files.url}/nowhere/"
    files.failing = 404
    with pytest.raises(
        StorageNotFound, match=f"cannot write {re.escape(missing)}a.json: the server answers 404"
    ):
        upload(folder, missing)
    files.failing = 0
    closed = f"http://127.0.0.1:{free_port()}/dav/"
    with pytest.raises(StorageUnreachable, match=f"cannot write {re.escape(closed)}a.json: cannot connect"):
        upload(folder, closed)
