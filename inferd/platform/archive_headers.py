"""An uploaded archive's own structure, walked before `tarfile` or `zipfile` is let near it.

Both readers trust what an archive says about itself. `tarfile` reads a GNU long-name or long-link
header (``L``, ``K``) and a PAX header (``x``, ``g``, ``X``) whole, in one read of the size its header
block declares: a 1 MiB tar.gz declaring a 1 GiB long name grew the control process by 3 GiB.
`zipfile` reads the whole central directory and makes an object of each of its entries before anyone
can count them: 1.5 million entries took 900 MiB. So an upload is first walked here, and refused
(`PayloadTooLarge`, `InvalidInput`) before either reader runs:

- a tar is decompressed as a stream (never whole in memory) and its 512-byte header blocks are read
  the way `tarfile` reads them (checksum, octal and base-256 sizes, the same next-header offsets),
  refusing an extension header larger than ``header_bytes``, extension headers adding up past
  ``metadata_bytes``, a stream (headers, padding and contents) longer than ``unpacked_bytes``, more
  than ``members`` members, and what tarfile would read in ways this walk does not follow (sparse
  files, a size set by a global PAX header, malformed PAX records, a negative size);
- a zip's end-of-central-directory record (zip64's too) is found where `zipfile` looks for it; its
  entry count and the central directory's size are checked, then the directory's entries are
  counted, without being parsed, as `zipfile` would walk them.

What the tar walk read of headers is returned, so that it is counted against the unpacked limit with
the contents extracted afterwards.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
import struct
import tarfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from io import BufferedIOBase
from pathlib import Path
from typing import BinaryIO

from inferd.core.errors import InvalidInput, PayloadTooLarge

BLOCK = 512
_CHUNK = 1 << 20
#: Header types whose content tarfile reads whole: GNU long name and long link, PAX extended,
#: global and Solaris extended.
EXTENSIONS = {b"L": "GNU long-name", b"K": "GNU long-link", b"x": "PAX", b"g": "PAX global", b"X": "PAX"}
#: Member types tarfile knows (`tarfile.SUPPORTED_TYPES`); of any other, as of a regular file, it
#: skips the declared size to find the next header.
_KNOWN = frozenset({b"0", b"\0", b"1", b"2", b"3", b"4", b"5", b"6", b"7", b"L", b"K", b"S"})
#: Extension headers one member may carry (tarfile follows them by recursion).
_MAX_CHAIN = 8
#: A PAX record's start: its length (as newer tarfiles take it, at most 20 digits) and keyword.
_PAX_RECORD = re.compile(rb"([0-9]{1,20}) ([^=]+)=")
_UNREADABLE = (OSError, EOFError, zlib.error, lzma.LZMAError)


@dataclass(frozen=True)
class HeaderLimits:
    """What an upload may declare: ``header_bytes`` in one tar extension header, ``metadata_bytes`` in
    all of them (or in a zip's central directory), ``unpacked_bytes`` of tar stream, ``members``."""

    header_bytes: int
    metadata_bytes: int
    unpacked_bytes: int
    members: int


def check_tar(path: Path, limits: HeaderLimits, label: str) -> TarWalk:
    """Walk the tar at ``path`` (plain, gz, bz2 or xz: the first of them that gives a tar header, as
    `tarfile.open` picks) without trusting any size it declares: the walk done (``headers``,
    ``offsets``)."""
    for opener in _OPENERS:
        try:
            stream = opener(path)
        except _UNREADABLE:
            continue
        with stream:
            try:
                first = _read(stream, BLOCK)
                if first.count(0) != BLOCK:  # a zero block is an empty tar; a short one none
                    tarfile.TarInfo.frombuf(first, "utf-8", "surrogateescape")
            except (*_UNREADABLE, tarfile.HeaderError):
                continue
            try:
                walk = TarWalk(stream, limits, label)
                walk.run(first)
                return walk
            except _UNREADABLE as exc:
                raise InvalidInput(f"{label} is not a readable tar or zip archive: {exc}") from None
    raise InvalidInput(f"{label} is not a readable tar or zip archive")


def _plain(path: Path) -> BufferedIOBase:
    return open(path, "rb")


def _gzip(path: Path) -> BufferedIOBase:
    return gzip.GzipFile(path, "rb")


def _bz2(path: Path) -> BufferedIOBase:
    return bz2.BZ2File(path, "rb")


def _xz(path: Path) -> BufferedIOBase:
    return lzma.LZMAFile(path, "rb")


#: In `tarfile.open`'s order for ``r:*``: uncompressed first.
_OPENERS: tuple[Callable[[Path], BufferedIOBase], ...] = (_plain, _gzip, _bz2, _xz)


def _read(stream: BufferedIOBase, size: int) -> bytes:
    """Up to ``size`` bytes (fewer only at the end of the stream)."""
    parts, left = [], size
    while left > 0:
        part = stream.read(min(left, _CHUNK))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _blocks(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


class TarWalk:
    """One pass over a decompressed tar stream, in the steps `TarFile.next` takes."""

    def __init__(self, stream: BufferedIOBase, limits: HeaderLimits, label: str) -> None:
        self.stream, self.limits, self.label = stream, limits, label
        self.read = 0  # bytes of the stream so far
        self.headers = 0  # of them, header blocks and extension contents
        self.extensions = 0  # declared sizes of extension headers, all told
        #: Where each member's headers start, as `TarInfo.offset` says.
        self.offsets: list[int] = []

    def run(self, first: bytes) -> None:
        block = first
        self._count(len(first))
        while len(block) == BLOCK and block.count(0) != BLOCK:  # tarfile stops at a short or zero block
            try:
                info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
            except tarfile.HeaderError:
                break  # as tarfile ends the archive at a bad header after the first
            self._member(info, self.read - BLOCK)
            block = _read(self.stream, BLOCK)
            self._count(len(block))

    def _member(self, info: tarfile.TarInfo, offset: int) -> None:
        """One member from its first header ``info`` at ``offset``: its extension headers, then its
        own header and the contents tarfile skips to find the next one."""
        self.headers += BLOCK
        pax_size: int | None = None
        seen: set[bytes] = set()
        for _ in range(_MAX_CHAIN):
            if info.type not in EXTENSIONS:
                break
            kind = b"x" if info.type == b"X" else info.type
            if kind in seen and kind != b"g":
                raise InvalidInput(f"{self.label} has two {EXTENSIONS[kind]} headers for one member")
            seen.add(kind)
            content = self._extension(info)
            if kind in (b"x", b"g"):
                found = self._pax(content, kind)
                pax_size = found if kind == b"x" else pax_size
            if kind == b"g" and seen == {b"g"}:
                offset = self.read  # tarfile's offset of a member after a global header is its own
            block = _read(self.stream, BLOCK)
            self._count(len(block))
            try:
                info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
            except tarfile.HeaderError as exc:
                said = f"{self.label} has a bad header after an extension header: {exc}"
                raise InvalidInput(said) from None
            self.headers += BLOCK
        else:
            raise InvalidInput(f"{self.label} has more than {_MAX_CHAIN - 1} extension headers in a row")
        if info.type == b"S":
            raise InvalidInput(f"{self.label} holds a sparse file, which is not taken")
        self.offsets.append(offset)
        if len(self.offsets) > self.limits.members:
            raise PayloadTooLarge(f"{self.label} has more than {self.limits.members} members")
        size = info.size if pax_size is None else pax_size
        if size < 0:
            raise InvalidInput(f"{self.label} has a member declaring a negative size")
        if info.isreg() or info.type not in _KNOWN:
            self._skip(_blocks(size))

    def _extension(self, info: tarfile.TarInfo) -> bytes:
        """The content of an extension header (with its padding, all of which tarfile reads), read
        only once its declared size is known to be small."""
        kind = EXTENSIONS[info.type]
        if info.size < 0:
            raise InvalidInput(f"{self.label} has a {kind} header declaring a negative size")
        if info.size > self.limits.header_bytes:
            raise PayloadTooLarge(
                f"{self.label} has a {kind} header declaring {info.size} bytes, more than the "
                f"{self.limits.header_bytes} an archive header may hold"
            )
        self.extensions += info.size
        if self.extensions > self.limits.metadata_bytes:
            raise PayloadTooLarge(
                f"{self.label} has extension headers (long names, PAX records) of more than "
                f"{self.limits.metadata_bytes} bytes in all"
            )
        padded = _blocks(info.size)
        content = _read(self.stream, padded)
        self._count(len(content))
        if len(content) < padded:
            raise InvalidInput(f"{self.label} ends inside a {kind} header")
        self.headers += padded
        return content

    def _pax(self, content: bytes, kind: bytes) -> int | None:
        """The size an extended PAX header sets, if any. Records are read as tarfile reads them (up to
        a NUL byte, padding included), and refused unless each is well formed (then every version of
        tarfile reads them alike) and unless it asks for what this walk does not follow."""
        size: int | None = None
        position = 0
        while position < len(content) and content[position] != 0:
            match = _PAX_RECORD.match(content, position)
            end = position + int(match[1]) if match else 0
            if match is None or end > len(content) or end < match.end() + 1 or content[end - 1] != 0x0A:
                raise InvalidInput(f"{self.label} has a malformed PAX record at byte {position}")
            keyword, value = match[2], content[match.end() : end - 1]
            if keyword.startswith(b"GNU.sparse."):
                raise InvalidInput(f"{self.label} holds a sparse file, which is not taken")
            if keyword == b"size":
                if kind == b"g":
                    raise InvalidInput(f"{self.label} has a global PAX header setting 'size'")
                if re.fullmatch(rb"[0-9]{1,30}", value) is None:
                    raise InvalidInput(f"{self.label} has a PAX 'size' that is not a number")
                size = int(value)
            position = end
        return size

    def _skip(self, size: int) -> None:
        """Read past ``size`` bytes of contents, chunk by chunk, counting them."""
        if self.read + size > self.limits.unpacked_bytes:
            raise PayloadTooLarge(f"{self.label} expands past {self.limits.unpacked_bytes} bytes")
        left = size
        while left > 0:
            got = len(self.stream.read(min(left, _CHUNK)))
            if not got:
                raise InvalidInput(f"{self.label} is truncated: a member's contents end early")
            self._count(got)
            left -= got

    def _count(self, size: int) -> None:
        self.read += size
        if self.read > self.limits.unpacked_bytes:
            raise PayloadTooLarge(f"{self.label} expands past {self.limits.unpacked_bytes} bytes")


# -- zip ---------------------------------------------------------------------------------------------

_EOCD = struct.Struct("<4s4H2LH")  # signature, disks, entries here, entries, size, offset, comment
_LOCATOR = struct.Struct("<4sLQL")  # zip64 locator: signature, disk, record offset, disks
_EOCD64 = struct.Struct("<4sQ2H2L4Q")  # zip64 record (without extensible data)
_ENTRY = struct.Struct("<4s4B4HL2L5H2L")  # a central directory entry's fixed part


def check_zip(path: Path, limits: HeaderLimits, label: str) -> int:
    """Refuse a zip whose central directory is larger than ``metadata_bytes`` or holds more than
    ``members`` entries, before `zipfile` parses it; how many entries it holds."""
    with open(path, "rb") as file:
        found = _end_record(file)
        if found is None:
            raise InvalidInput(f"{label} is not a readable tar or zip archive: no end of central directory")
        location, entries, size, zip64 = found
        if entries > limits.members:
            raise PayloadTooLarge(
                f"{label} has more than {limits.members} members (its central directory declares {entries})"
            )
        if size > limits.metadata_bytes:
            raise PayloadTooLarge(
                f"{label} has a central directory of {size} bytes, more than {limits.metadata_bytes}"
            )
        start = location - size - (_EOCD64.size + _LOCATOR.size if zip64 else 0)  # offset + concat
        if start < 0:
            raise InvalidInput(f"{label} is not a readable tar or zip archive: bad central directory offset")
        file.seek(start)
        directory = file.read(size)
    return _count_entries(directory, size, limits.members, label)


def _count_entries(directory: bytes, size: int, members: int, label: str) -> int:
    """Count the entries as `zipfile` walks them: fixed part, then name, extra field and comment."""
    count, position = 0, 0
    while position < size:
        if position + _ENTRY.size > len(directory):
            raise InvalidInput(f"{label} is not a readable tar or zip archive: truncated central directory")
        fields = _ENTRY.unpack_from(directory, position)
        if fields[0] != b"PK\x01\x02":
            raise InvalidInput(f"{label} is not a readable tar or zip archive: bad central directory entry")
        count += 1
        if count > members:
            raise PayloadTooLarge(f"{label} has more than {members} members")
        position += _ENTRY.size + fields[12] + fields[13] + fields[14]
    return count


def _end_record(file: BinaryIO) -> tuple[int, int, int, bool] | None:
    """Where the end-of-central-directory record is and what it (or zip64's) declares: entries and
    directory size (the directory ends where the record, or zip64's, begins). Found as `zipfile`
    finds it: in the last 22 bytes, else the last signature in the last 64 KiB + 22."""
    file.seek(0, 2)
    length = file.tell()
    if length < _EOCD.size:
        return None
    file.seek(length - _EOCD.size)
    tail = file.read()
    if tail[:4] == b"PK\x05\x06" and tail[-2:] == b"\0\0":
        location, record = length - _EOCD.size, tail
    else:
        start = max(length - (1 << 16) - _EOCD.size, 0)
        file.seek(start)
        data = file.read()
        found = data.rfind(b"PK\x05\x06")
        record = data[found : found + _EOCD.size]
        if found < 0 or len(record) != _EOCD.size:
            return None
        location = start + found
    _, _, _, _, entries, size, _, _ = _EOCD.unpack(record)
    if location >= _LOCATOR.size + _EOCD64.size:
        file.seek(location - _LOCATOR.size)
        locator = file.read(_LOCATOR.size)
        if locator[:4] == b"PK\x06\x07":
            file.seek(location - _LOCATOR.size - _EOCD64.size)
            record64 = file.read(_EOCD64.size)
            if record64[:4] == b"PK\x06\x06":
                fields = _EOCD64.unpack(record64)
                return location, fields[7], fields[8], True
    return location, entries, size, False
