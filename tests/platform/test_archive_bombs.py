"""Archives whose structure is the attack, posted to a real control process as version uploads (the
control API's multipart form and ABEJA's presigned PUT): a GNU long-name or long-link header declaring
1 GiB (a 1 MiB tar.gz), PAX headers declaring 256 MiB, and zips whose central directory holds or
declares far more entries than a version may have. Each is refused (413, JSON naming what was wrong)
before Python's readers take it in: the control process's peak memory stays within 64 MiB of what
it was, the refusal is quick, nothing is left in its data folder, and it serves on."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import httpx
import pytest

from tests.platform.abeja.conftest import Control, control
from tests.platform.archive_bombs import (
    END,
    MIB,
    good_member,
    gzip_of,
    long_header_bomb,
    padded,
    pax_bomb,
    tar_header,
    zip_entry,
    zip_with,
)

GIB = 1024 * MIB
ORG = "/organizations/2345678901234"
#: What a refused bomb may add to the control process's peak memory.
GROWTH = 64 * MIB


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Control]:
    """One control process with default upload limits, a deployment ``d`` on the control API and
    ``a`` on ABEJA's."""
    with control(tmp_path_factory.mktemp("bombs") / "data") as started:
        assert started.call("POST", "/platform/v1/deployments", json={"name": "d"}).status_code == 201
        assert started.call("POST", f"{ORG}/deployments", json={"name": "a"}).status_code == 200
        assert post(started, gzip_of(good_member() + END), "warm-up").status_code == 201
        yield started


_labels = itertools.count()


def post(running: Control, archive: bytes, label: str | None = None) -> httpx.Response:
    """Post ``archive`` as a new version of ``d``, labelled ``label`` or afresh each time (so that a
    bomb accepted where it should not be does not make the next one a 409)."""
    label = label or f"bomb-{next(_labels)}"
    return running.call(
        "POST",
        "/platform/v1/deployments/d/versions",
        files={"archive": ("project.tar.gz", archive, "application/gzip")},
        data={"label": label},
    )


def rss(running: Control) -> int:
    for line in Path(f"/proc/{running.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


T = TypeVar("T")


def growth(running: Control, call: Callable[[], T]) -> tuple[T, int, float]:
    """What ``call`` returns, how far the control process's resident memory rose above where it was
    while it ran (sampled every 5 ms: its peak, whatever earlier tests left behind), and its seconds."""
    before, highest, done = rss(running), [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            highest[0] = max(highest[0], rss(running))
            done.wait(0.005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.monotonic()
    try:
        result = call()
    finally:
        took = time.monotonic() - started
        done.set()
        sampler.join()
    return result, max(highest[0], rss(running)) - before, took


def leftovers(running: Control) -> list[Path]:
    """Scratch folders and files an upload left in the data folder."""
    found = running.data.rglob("*")
    return [path for path in found if path.name.startswith(".tmp-") or path.name == "upload"]


def assert_still_serving(running: Control, label: str) -> None:
    assert post(running, gzip_of(good_member(content=label.encode()) + END), label).status_code == 201
    assert label in [v["label"] for v in running.call("GET", "/platform/v1/deployments/d/versions").json()]
    assert leftovers(running) == []


@pytest.mark.parametrize(("kind", "said"), [(b"L", "GNU long-name"), (b"K", "GNU long-link")])
def test_a_gnu_long_header_declaring_a_gib_is_refused_before_it_is_read(
    running: Control, kind: bytes, said: str
) -> None:
    bomb = long_header_bomb(GIB, kind)
    assert len(bomb) < 2 * MIB
    refused, grew, took = growth(running, lambda: post(running, bomb))
    assert refused.status_code == 413, refused.text
    error = refused.json()["error"]
    assert f"{said} header declaring {GIB} bytes" in error and "65536" in error, error
    assert took < 5, took
    assert grew < GROWTH, grew / MIB
    assert_still_serving(running, f"after-{kind.decode()}")


def test_header_bombs_at_once_do_not_add_up(running: Control) -> None:
    bombs = [long_header_bomb(GIB, b"L"), long_header_bomb(GIB, b"K"), pax_bomb(256 * MIB)]
    with ThreadPoolExecutor(len(bombs)) as pool:
        answers, grew, _ = growth(running, lambda: list(pool.map(lambda bomb: post(running, bomb), bombs)))
    assert [answer.status_code for answer in answers] == [413] * len(bombs), [a.text for a in answers]
    assert grew < GROWTH, grew / MIB
    assert_still_serving(running, "after-three")


@pytest.mark.parametrize(("kind", "said"), [(b"x", "PAX"), (b"g", "PAX global")])
def test_a_pax_header_declaring_256_mib_is_refused(running: Control, kind: bytes, said: str) -> None:
    refused, grew, _ = growth(running, lambda: post(running, pax_bomb(256 * MIB, kind)))
    assert refused.status_code == 413, refused.text
    assert f"{said} header declaring {256 * MIB} bytes" in refused.json()["error"]
    assert grew < GROWTH, grew / MIB
    # one of 64 KiB is a header like any other, its bytes counted with the contents
    assert post(running, pax_bomb(64 * 1024 - 512, kind), f"pax-{kind.decode()}").status_code == 201
    assert_still_serving(running, f"after-{kind.decode()}")


def test_headers_count_against_the_unpacked_limit(tmp_path: Path) -> None:
    """Headers of 60 KiB each, under the per-header cap, still add up: a 1 MiB unpacked limit refuses
    twenty of them, contents or not."""
    record = b"%d comment=" % (60 * 1024)
    record += b"a" * (60 * 1024 - len(record) - 1) + b"\n"
    stream = b"".join(
        tar_header(b"././@PaxHeader", len(record), b"x") + padded(record) + good_member(b"m%d.py" % i)
        for i in range(20)
    )
    with control(tmp_path / "data", INFERD_MAX_BUNDLE_SIZE=str(MIB)) as small:
        assert small.call("POST", "/platform/v1/deployments", json={"name": "d"}).status_code == 201
        refused = post(small, gzip_of(stream + END))
        assert refused.status_code == 413 and f"expands past {MIB} bytes" in refused.json()["error"]
        assert post(small, gzip_of(stream[: 3 * (len(stream) // 20)] + END), "three").status_code == 201
        assert leftovers(small) == []


def test_abeja_upload_refuses_a_header_bomb_and_the_version_stays_pending(running: Control) -> None:
    created = running.call("POST", f"{ORG}/deployments/a/versions", json={"version": "1.0.0"})
    assert created.status_code == 200, created.text
    upload = urlsplit(created.json()["upload_url"])
    target = f"{upload.path}?{upload.query}"
    bomb = long_header_bomb(GIB)
    refused, grew, _ = growth(running, lambda: running.call("PUT", target, token=None, content=bomb))
    assert refused.status_code == 413, refused.text
    assert f"GNU long-name header declaring {GIB} bytes" in refused.json()["error_description"]
    assert grew < GROWTH, grew / MIB
    assert leftovers(running) == []
    good = running.call("PUT", target, token=None, content=gzip_of(good_member(b"main.py") + END))
    assert good.status_code == 200, good.text


def test_a_zip_declaring_a_million_and_a_half_entries_is_refused_from_its_end_record(
    running: Control,
) -> None:
    refused, _, took = growth(running, lambda: post(running, zip_with(b"", 1_500_000)))
    assert refused.status_code == 413, refused.text
    assert "declares 1500000" in refused.json()["error"] and "20000 members" in refused.json()["error"]
    assert took < 5, took
    assert_still_serving(running, "after-zip-count")


def test_a_zip_directory_of_300k_entries_is_counted_not_parsed(running: Control) -> None:
    """Its end record says one entry; the 14 MiB directory holds 300,000, counted without one
    `ZipInfo` made (zipfile's parse of them took over 100 MiB)."""
    archive = zip_with(zip_entry(b"a") * 300_000, 1)
    refused, grew, took = growth(running, lambda: post(running, archive))
    assert refused.status_code == 413, refused.text
    assert "more than 20000 members" in refused.json()["error"]
    assert took < 10, took
    assert grew < GROWTH, grew / MIB
    assert_still_serving(running, "after-zip-walk")


def test_a_zip_directory_past_the_metadata_limit_is_refused_unread(running: Control) -> None:
    refused = post(running, zip_with(zip_entry(b"a" * 400) * 40_000, 1))
    assert refused.status_code == 413, refused.text
    assert "central directory of 17840000 bytes, more than 16777216" in refused.json()["error"]


def test_a_zip_name_flagged_utf8_that_is_not_is_a_400(running: Control) -> None:
    refused = post(running, zip_with(zip_entry(b"bad-\xff.py", flags=0x800), 1))
    assert refused.status_code == 400, refused.text
    assert "not a readable tar or zip archive" in refused.json()["error"]
    assert_still_serving(running, "after-utf8")
