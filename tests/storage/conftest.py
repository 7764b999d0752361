"""Real servers for the storage tests: moto's S3 API server and a stdlib HTTP file server, both on
free loopback ports, and a cache folder per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from inferd.storage import ModelCache
from tests.dialects.cortex.conftest import tf_models_dir  # noqa: F401 (a fixture: SavedModels built here)
from tests.storage.files_server import FileServer, file_server


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)  # 0: no port race
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@dataclass
class Bucket:
    name: str
    client: Any  # a boto3 S3 client

    def put(self, key: str, body: bytes) -> str:
        self.client.put_object(Bucket=self.name, Key=key, Body=body)
        return f"s3://{self.name}/{key}"


@pytest.fixture
def bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Bucket:
    """A new bucket on the S3 server, which this test's environment points at as boto3 users do."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    name = f"models-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3")
    client.create_bucket(Bucket=name)
    return Bucket(name, client)


def without_credentials(monkeypatch: pytest.MonkeyPatch, nowhere: Path) -> None:
    """No AWS credentials anywhere boto3 looks (``nowhere``: a path that does not exist), and no
    instance metadata asked for either (that would leave loopback)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(nowhere))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(nowhere))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def files() -> Iterator[FileServer]:
    with file_server() as server:
        yield server


@pytest.fixture
def cache_root(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def cache(cache_root: Path) -> Iterator[ModelCache]:
    model_cache = ModelCache(cache_root, 10**9)
    yield model_cache
    model_cache.close()
