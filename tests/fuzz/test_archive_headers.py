"""The upload walk of `inferd.platform.archive_headers` against the readers it guards: archives
written by `tarfile` and `zipfile` (and tar headers written by hand, of every type, with PAX records
that set sizes), then bytes changed at random (a tar header's checksum made right again or not).
Whenever the walk lets an archive through, the reader must see it as the walk did: tarfile the same
members at the same offsets (so no header was read that the walk did not size), zipfile the same
number of entries (so none was parsed past the count)."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from inferd.core.errors import InvalidInput, PayloadTooLarge
from inferd.platform.archive_headers import HeaderLimits, check_tar, check_zip
from tests.fuzz.conftest import EXAMPLES
from tests.platform.archive_bombs import padded, tar_header

LIMITS = HeaderLimits(header_bytes=1024, metadata_bytes=4096, unpacked_bytes=1 << 20, members=6)
#: What the readers raise for a broken archive (artifacts.py answers these 400).
UNREADABLE = (
    tarfile.TarError,
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    OSError,
    UnicodeDecodeError,
)
KINDS = [b"0", b"\0", b"1", b"2", b"5", b"7", b"L", b"K", b"x", b"g", b"X", b"S", b"V"]
COMPRESSORS = [gzip.compress, bz2.compress, lzma.compress]
names = st.text(st.sampled_from("ab/é.-_"), min_size=1, max_size=160)


@st.composite
def written_tars(draw: st.DrawFn) -> bytes:
    """A tar as `tarfile` writes it, in one of its formats."""
    form = draw(st.sampled_from([tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT]))
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=form) as tar:
        for _ in range(draw(st.integers(0, 5))):
            info = tarfile.TarInfo(draw(names))
            kind = draw(st.sampled_from([tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE]))
            info.type = kind
            content = draw(st.binary(max_size=700)) if kind == tarfile.REGTYPE else b""
            info.size = len(content)
            if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                info.linkname = draw(names)
            if form == tarfile.PAX_FORMAT and draw(st.booleans()):
                info.pax_headers = {"comment": draw(st.text(max_size=40))}
            try:
                tar.addfile(info, io.BytesIO(content))
            except ValueError:  # a name too long for ustar
                continue
    return out.getvalue()


records = st.sampled_from(["size", "path", "comment", "linkpath", "GNU.sparse.size", "hdrcharset", "mtime"])


@st.composite
def pax_content(draw: st.DrawFn) -> bytes:
    body = b""
    for _ in range(draw(st.integers(0, 3))):
        keyword = draw(records).encode()
        number = str(draw(st.integers(0, 2000))).encode()
        value = number if draw(st.booleans()) else draw(st.binary(max_size=20))
        record = b" " + keyword + b"=" + value + b"\n"
        digits = next(d for d in range(1, 6) if len(str(len(record) + d)) == d)
        length = len(record) + digits + draw(st.sampled_from([0, 0, 0, -1, 1]))  # sometimes wrong
        body += str(length).encode() + record
    return body


@st.composite
def handmade_tars(draw: st.DrawFn) -> bytes:
    """Headers of any type, sized as they like, with contents shorter or longer than they say."""
    out = b""
    for _ in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(KINDS))
        if kind in (b"x", b"g", b"X"):
            content = draw(pax_content())
        else:
            long = b"n" * draw(st.integers(0, 1100))
            content = draw(st.binary(max_size=600)) if draw(st.booleans()) else long
        size = len(content) if draw(st.booleans()) else draw(st.integers(0, 3000))
        name = draw(st.sampled_from([b"a", b"d/", b"x.py", b"././@LongLink"]))
        out += tar_header(name, size, kind) + padded(content)
    return out + b"\0" * draw(st.sampled_from([0, 512, 1024]))


def checksummed(block: bytearray) -> None:
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)


@st.composite
def mutated(draw: st.DrawFn, archives: st.SearchStrategy[bytes]) -> bytes:
    data = bytearray(draw(archives))
    for _ in range(draw(st.integers(0, 3))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        data[at] = draw(st.integers(0, 255))
        if draw(st.booleans()):
            start = at - at % 512
            block = bytearray(data[start : start + 512].ljust(512, b"\0"))
            checksummed(block)
            data[start : start + 512] = block[: len(data) - start]
    return bytes(data)


def _file(data: bytes) -> Path:
    file = tempfile.NamedTemporaryFile(delete=False, suffix=".archive")
    with file:
        file.write(data)
    return Path(file.name)


def _agrees_with_tarfile(data: bytes) -> None:
    path = _file(data)
    try:
        try:
            walk = check_tar(path, LIMITS, "t")
        except (InvalidInput, PayloadTooLarge):
            return
        try:
            with tarfile.open(path, "r:*") as tar:
                offsets = [info.offset for info in tar]
        except UNREADABLE:
            return
        assert offsets == walk.offsets
        assert len(offsets) <= LIMITS.members
    finally:
        path.unlink()


@settings(max_examples=EXAMPLES * 5)
@given(mutated(written_tars() | handmade_tars()))
def test_a_tar_the_walk_lets_through_is_the_tar_tarfile_reads(data: bytes) -> None:
    _agrees_with_tarfile(data)


@settings(max_examples=EXAMPLES)
@given(mutated(written_tars() | handmade_tars()), st.sampled_from(COMPRESSORS))
def test_compressed_tars_too(data: bytes, compress: Callable[[bytes], bytes]) -> None:
    _agrees_with_tarfile(compress(data))


@st.composite
def written_zips(draw: st.DrawFn) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for index in range(draw(st.integers(0, 8))):
            info = zipfile.ZipInfo(f"{index}-" + draw(names))
            info.comment = draw(st.binary(max_size=30))
            archive.writestr(info, draw(st.binary(max_size=50)))
        archive.comment = draw(st.binary(max_size=40))
    return out.getvalue()


@st.composite
def zips_changed_near_the_end(draw: st.DrawFn) -> bytes:
    """Bytes changed where the central directory and end records are (and a zip64 pair, sometimes)."""
    data = bytearray(draw(written_zips()))
    for _ in range(draw(st.integers(0, 4))):
        at = len(data) - 1 - draw(st.integers(0, min(len(data) - 1, 400)))
        data[at] = draw(st.integers(0, 255))
    return bytes(data)


@settings(max_examples=EXAMPLES * 5)
@given(zips_changed_near_the_end())
def test_a_zip_the_walk_lets_through_has_the_entries_it_counted(data: bytes) -> None:
    path = _file(data)
    try:
        try:
            count = check_zip(path, LIMITS, "z")
        except (InvalidInput, PayloadTooLarge):
            return
        try:
            with zipfile.ZipFile(path) as archive:
                entries = len(archive.infolist())
        except (*UNREADABLE, NotImplementedError):
            return
        assert entries == count <= LIMITS.members
    finally:
        path.unlink()


def test_a_zip_of_more_members_than_allowed_is_refused() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for index in range(LIMITS.members + 1):
            archive.writestr(str(index), b"")
    path = _file(out.getvalue())
    try:
        try:
            check_zip(path, LIMITS, "z")
        except PayloadTooLarge as refused:
            assert "more than 6 members" in str(refused)
        else:
            raise AssertionError("not refused")
    finally:
        path.unlink()
