"""gs:// without a GCS server: an unreachable emulator endpoint must fail fast, naming the URI."""

from __future__ import annotations

import time
from pathlib import Path

import fsspec.config
import pytest

from inferd.storage import ModelCache
from inferd.storage.errors import StorageUnreachable
from tests.servers import free_port


def test_an_unreachable_store_fails_within_the_check_deadline(
    cache_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"127.0.0.1:{free_port()}")
    monkeypatch.setitem(fsspec.config.conf, "gcs", {"token": "anon"})  # what FSSPEC_GCS_TOKEN=anon sets
    began = time.monotonic()
    with pytest.raises(
        StorageUnreachable, match=r"cannot fetch gs://bucket/model\.onnx: .*STORAGE_EMULATOR_HOST"
    ):
        ModelCache(cache_root, 10**9, check_seconds=1.5).fetch("gs://bucket/model.onnx")
    assert time.monotonic() - began < 4
