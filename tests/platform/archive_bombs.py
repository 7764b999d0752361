"""Hostile archives built by hand for the upload tests: tar headers written byte by byte (so they may
declare what no writer would), gzip that inflates to a GiB from a MiB (gzip members of one repeated
byte, concatenated), and zips whose end-of-central-directory record says what their test needs."""

from __future__ import annotations

import gzip
import struct

BLOCK = 512
MIB = 1024 * 1024


def tar_header(name: bytes, size: int, kind: bytes = b"0", mode: int = 0o644) -> bytes:
    """One 512-byte tar header block (GNU magic) with a right checksum; ``size`` as octal, or base-256
    when it does not fit in 11 octal digits."""
    block = bytearray(BLOCK)
    block[0 : len(name)] = name[:100]
    block[100:108] = b"%07o\0" % mode
    block[108:116] = b"0000000\0"
    block[116:124] = b"0000000\0"
    if size < 8**11:
        block[124:136] = b"%011o\0" % size
    else:
        block[124:136] = b"\x80" + size.to_bytes(11, "big")
    block[136:148] = b"00000000000\0"
    block[156:157] = kind
    block[257:265] = b"ustar  \0"
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    return bytes(block)


def padded(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % BLOCK)


def gzip_of(*parts: bytes | tuple[int, int]) -> bytes:
    """A gzip stream of ``parts`` in order, each a gzip member of its own: bytes as they are, and
    ``(count, byte)`` for ``count`` copies of one byte, written as one compressed MiB repeated (so a
    GiB costs about a MiB, and no time)."""
    out = bytearray()
    full = gzip.compress(b"\0" * MIB, compresslevel=9, mtime=0)
    for part in parts:
        if isinstance(part, bytes):
            out += gzip.compress(part, mtime=0)
            continue
        count, byte = part
        if byte:
            full_of = gzip.compress(bytes([byte]) * MIB, compresslevel=9, mtime=0)
        else:
            full_of = full
        out += full_of * (count // MIB)
        if count % MIB:
            out += gzip.compress(bytes([byte]) * (count % MIB), mtime=0)
    return bytes(out)


def good_member(name: bytes = b"model.py", content: bytes = b"x = 1\n") -> bytes:
    return tar_header(name, len(content)) + padded(content)


END = b"\0" * (2 * BLOCK)


def long_header_bomb(declared: int, kind: bytes = b"L") -> bytes:
    """A tar.gz whose first header is a GNU long-name (``L``) or long-link (``K``) header declaring
    ``declared`` bytes, which follow (zeros, then a member and the end)."""
    head = tar_header(b"././@LongLink", declared, kind)
    return gzip_of(head, (declared + (-declared % BLOCK), 0), good_member() + END)


def pax_bomb(declared: int, kind: bytes = b"x") -> bytes:
    """A tar.gz whose first header is a PAX header (``x``, or global ``g``) of one well-formed record
    (``comment``) of ``declared`` bytes, then a member and the end."""
    prefix = b"%d comment=" % declared
    head = tar_header(b"././@PaxHeader", declared, kind)
    filler = declared - len(prefix) - 1
    tail = b"\n" + b"\0" * (-declared % BLOCK)
    return gzip_of(head + prefix, (filler, ord("a")), tail + good_member() + END)


def zip_entry(name: bytes, flags: int = 0) -> bytes:
    """A central directory entry (46 bytes and the name) of an empty stored file at offset 0; flag
    0x800 says its name is UTF-8."""
    fields = (20, 3, 20, 0, flags, 0, 0, 0, 0, 0, 0, len(name), 0, 0, 0, 0, 0, 0)
    return struct.pack("<4s4B4HL2L5H2L", b"PK\x01\x02", *fields) + name


def zip_with(directory: bytes, declared_entries: int) -> bytes:
    """A zip of one empty local file, then ``directory`` as its central directory, ended by a zip64
    end record and locator declaring ``declared_entries`` and a classic end record (its own counts
    0xFFFF, as zip64 writers leave them)."""
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, 1, 0) + b"a"
    start = len(local)
    record64_at = start + len(directory)
    record64 = struct.pack(
        "<4sQ2H2L4Q",
        b"PK\x06\x06",
        44,
        45,
        45,
        0,
        0,
        declared_entries,
        declared_entries,
        len(directory),
        start,
    )
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, record64_at, 1)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return local + directory + record64 + locator + end
