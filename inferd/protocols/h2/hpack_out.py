"""Header blocks inferd's HTTP/2 side sends (the gateway's gRPC relay, the native gRPC server): HPACK
literals that never touch the dynamic table.

The relay re-encodes every header block it passes on (each connection has its own HPACK state), and
an encoder that never indexes is stateless: a field encodes to the same bytes on every connection,
so each field's bytes are computed once and kept (`encode_block`). Receivers decode them whatever
their dynamic table size; a connection's first block starts with a table size update to 0
(`TABLE_SIZE_ZERO`) so a peer that lowered its table size is told, as RFC 7541 4.2 asks.
"""

from __future__ import annotations

from collections.abc import Iterable

from hpack.table import HeaderTable

from inferd.core.varint import varint

Header = tuple[bytes, bytes]
#: A dynamic table size update to 0.
TABLE_SIZE_ZERO = b"\x20"
#: Fields kept encoded; past this many the cache starts afresh (values such as timeouts vary).
CACHE_LIMIT = 4096

#: The static table's index of each header name (the first, where a name has several).
_NAME_INDEX: dict[bytes, int] = {}
for _index, (_name, _) in enumerate(HeaderTable.STATIC_TABLE, start=1):
    _NAME_INDEX.setdefault(_name, _index)
_cache: dict[Header, bytes] = {}


def integer(value: int, prefix_bits: int, first: int = 0) -> bytes:
    """HPACK's integer with a ``prefix_bits`` prefix, ``first`` holding the byte's other bits: past
    the prefix, the rest is a little-endian base-128 varint (protobuf's)."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((first | value,))
    return bytes((first | limit,)) + varint(value - limit)


def field(name: bytes, value: bytes) -> bytes:
    """One field as a literal without indexing (its name indexed when the static table has it)."""
    found = _cache.get((name, value))
    if found is None:
        index = _NAME_INDEX.get(name)
        head = integer(index, 4) if index else b"\x00" + integer(len(name), 7) + name
        found = head + integer(len(value), 7) + value
        if len(_cache) >= CACHE_LIMIT:
            _cache.clear()
        _cache[name, value] = found
    return found


def encode_block(headers: Iterable[Header]) -> bytes:
    return b"".join([field(name, value) for name, value in headers])
