"""Backends are optional: importing inferd.storage loads none of their libraries, and a scheme whose
library is missing says which extra installs it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from inferd.storage import ModelCache, StorageError
from tests.servers import ROOT, with_this_tree


def test_importing_storage_loads_no_backend_library() -> None:
    code = (
        "import sys, inferd.storage, inferd.storage.cache\n"
        "libraries = ('fsspec', 's3fs', 'gcsfs', 'aiohttp', 'botocore')\n"
        "loaded = [name for name in libraries if name in sys.modules]\n"
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env=with_this_tree({}), timeout=60)


@pytest.mark.parametrize(
    ("uri", "library", "extra"),
    [
        ("s3://bucket/m.onnx", "s3fs", "s3"),
        ("gs://bucket/m.onnx", "gcsfs", "gcs"),
        ("https://h/m", "aiohttp", "http"),
    ],
)
def test_a_missing_backend_library_names_the_extra(
    uri: str, library: str, extra: str, cache: ModelCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, library, None)  # as if it were not installed: importing it fails
    monkeypatch.delitem(sys.modules, f"inferd.storage.{extra}", raising=False)
    scheme = uri.partition(":")[0]
    expected = (
        f"cannot fetch {uri}: {scheme}:// needs inferd's {extra} extra: pip install 'inferd\\[{extra}\\]'"
    )
    with pytest.raises(StorageError, match=expected):
        cache.fetch(uri)
