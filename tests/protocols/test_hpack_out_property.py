"""inferd's own HPACK encoder (`inferd.protocols.h2.hpack_out`) against the ``hpack`` library, its
reference: every block it encodes, decoded by hpack's decoder (as a peer of any table size would,
with the table size update a connection's first block starts with), gives back the headers it was
given, in order, byte for byte; its integers are hpack's."""

from __future__ import annotations

import hpack
from hpack.hpack import encode_integer
from hpack.table import HeaderTable
from hypothesis import given, settings
from hypothesis import strategies as st

from inferd.protocols.h2.hpack_out import CACHE_LIMIT, TABLE_SIZE_ZERO, encode_block, field, integer

#: Names the static table holds (indexed by name), and the gRPC ones it does not.
KNOWN = sorted({name for name, _ in HeaderTable.STATIC_TABLE})
GRPC = [b"grpc-status", b"grpc-message", b"grpc-timeout", b"te", b"inferd-endpoint", b"x-bin-bin"]
names = st.one_of(
    st.sampled_from(KNOWN),
    st.sampled_from(GRPC),
    st.binary(min_size=1, max_size=300),  # HPACK carries any octets; long ones take multi-byte lengths
)
value = st.one_of(st.binary(max_size=300), st.sampled_from([b"", b"200", b"application/grpc", bytes(200)]))
headers = st.lists(st.tuples(names, value), max_size=12)


def decoded(block: bytes, table_size: int = 4096) -> list[tuple[bytes, bytes]]:
    decoder = hpack.Decoder()
    decoder.header_table_size = table_size
    return [(bytes(name), bytes(value_)) for name, value_ in decoder.decode(block, raw=True)]


@settings(max_examples=500, deadline=None)
@given(headers=headers, table_size=st.sampled_from([0, 256, 4096, 65536]))
def test_hpack_decodes_what_inferd_encodes(headers: list[tuple[bytes, bytes]], table_size: int) -> None:
    block = encode_block(headers)
    assert decoded(block) == headers
    assert decoded(TABLE_SIZE_ZERO + block, table_size) == headers  # a connection's first block


@settings(max_examples=300, deadline=None)
@given(headers=headers)
def test_fields_are_the_same_bytes_every_time_and_leave_no_table(headers: list[tuple[bytes, bytes]]) -> None:
    """One decoder across many blocks (one connection): nothing inferd sends indexes a field, so the
    same headers decode the same in any order of blocks, and the table stays empty."""
    decoder = hpack.Decoder()
    for _ in range(2):
        block = b"".join(field(name, value_) for name, value_ in headers)
        assert [(bytes(n), bytes(v)) for n, v in decoder.decode(block, raw=True)] == headers
    assert not decoder.header_table.dynamic_entries


@given(value=st.integers(0, 2**40), prefix=st.integers(1, 8))
def test_integers_are_hpacks(value: int, prefix: int) -> None:
    assert integer(value, prefix) == bytes(encode_integer(value, prefix))


def test_the_field_cache_starts_afresh_past_its_limit() -> None:
    for number in range(CACHE_LIMIT + 10):
        header = (b"grpc-timeout", b"%dm" % number)
        assert decoded(field(*header)) == [header]
