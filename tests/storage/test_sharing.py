"""The cache as the processes of one server share it: one download for all, eviction of what nobody
uses, and the leftovers of a killed download cleaned up. Other processes are real (spawned)."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

from inferd.storage import ModelCache
from tests.storage import workers
from tests.storage.files_server import FileServer

_spawn = multiprocessing.get_context("spawn")


def fetch_and_let_go(root: Path, uri: str, max_bytes: int) -> bool:
    """Fetch as a process that then stops using the model would; whether it downloaded."""
    cache = ModelCache(root, max_bytes)
    try:
        return not cache.fetch(uri).from_cache
    finally:
        cache.close()


def cached_names(root: Path) -> set[str]:
    return {path.name for path in (root / "entries").glob("*/files/*")}


def test_workers_fetching_at_once_download_once(files: FileServer, cache_root: Path) -> None:
    url = files.put("/big.onnx", b"w" * 100_000, delay=0.5)
    with _spawn.Pool(3) as pool:
        results = pool.starmap(workers.fetch, [(cache_root, url)] * 3)
    assert files.gets["/big.onnx"] == 1
    assert sorted(from_cache for from_cache, _ in results) == [False, True, True]
    assert len({path for _, path in results}) == 1


def test_the_least_recently_used_entries_go_first(files: FileServer, cache_root: Path) -> None:
    a, b, c = (files.put(f"/{name}.onnx", name.encode() * 100) for name in "abc")
    for uri in (a, b, a, c):  # a is used again after b, so b is the least recently used
        fetch_and_let_go(cache_root, uri, max_bytes=250)
    assert cached_names(cache_root) == {"a.onnx", "c.onnx"}
    assert fetch_and_let_go(cache_root, b, max_bytes=250)  # downloaded again
    assert files.gets == {"/a.onnx": 1, "/b.onnx": 2, "/c.onnx": 1}


def test_an_entry_another_process_uses_is_not_evicted(files: FileServer, cache_root: Path) -> None:
    a, b, c = (files.put(f"/{name}.onnx", name.encode() * 100) for name in "abc")
    fetched, done = _spawn.Event(), _spawn.Event()
    holder = _spawn.Process(target=workers.fetch_and_hold, args=(cache_root, a, fetched, done))
    holder.start()
    try:
        assert fetched.wait(30)
        fetch_and_let_go(cache_root, b, max_bytes=150)
        assert cached_names(cache_root) == {"a.onnx", "b.onnx"}  # over the limit: a is in use, b is new
    finally:
        done.set()
        holder.join(30)
    fetch_and_let_go(cache_root, c, max_bytes=150)
    assert cached_names(cache_root) == {"c.onnx"}


def test_a_killed_download_leaves_nothing_behind(files: FileServer, cache_root: Path) -> None:
    slow = files.put("/slow.onnx", b"s" * 1000, delay=30)
    downloader = _spawn.Process(target=workers.fetch, args=(cache_root, slow))
    downloader.start()
    deadline = time.monotonic() + 30
    while not any((cache_root / "tmp").glob("*/files")):
        assert time.monotonic() < deadline, "the download did not start"
        time.sleep(0.02)
    downloader.kill()
    downloader.join(10)

    fetch_and_let_go(cache_root, files.put("/other.onnx", b"o"), max_bytes=10**9)  # any fetch sweeps
    assert not any((cache_root / "tmp").iterdir())
    files.files["/slow.onnx"].delay = 0
    assert fetch_and_let_go(cache_root, slow, max_bytes=10**9)
    assert cached_names(cache_root) == {"other.onnx", "slow.onnx"}
