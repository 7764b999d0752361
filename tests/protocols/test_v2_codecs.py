"""The V2 tensor codecs, sans-IO: JSON data, the raw layout, and what they refuse."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from inferd.core.errors import InvalidInput
from inferd.core.types import DTYPES
from inferd.protocols.v2 import codecs

NUMERIC = [name for name in DTYPES if name != "BYTES"]


@pytest.mark.parametrize("datatype", NUMERIC)
def test_raw_layout_round_trips_every_numeric_datatype(datatype: str) -> None:
    array = np.arange(6).astype(DTYPES[datatype]).reshape(2, 3)
    raw = codecs.encode_raw(array)
    assert len(raw) == codecs.raw_size(datatype, [2, 3])
    decoded = codecs.decode_raw("x", datatype, [2, 3], raw)
    assert decoded.dtype == array.dtype and np.array_equal(decoded, array)


def test_raw_is_little_endian_even_for_big_endian_arrays() -> None:
    array = np.array([1, 256], dtype=">u2")
    assert codecs.encode_raw(array) == struct.pack("<HH", 1, 256)


def test_bytes_raw_layout_has_length_prefixes() -> None:
    array = np.array([b"ab", b"", "é"], dtype=object)
    raw = codecs.encode_raw(array)
    assert raw == b"\x02\0\0\0ab" + b"\0\0\0\0" + b"\x02\0\0\0\xc3\xa9"
    assert codecs.decode_raw("x", "BYTES", [3], raw).tolist() == [b"ab", b"", "é".encode()]


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b"\x02\0\0\0ab", "fewer BYTES elements"),
        (b"\x09\0\0\0abcd", "runs past the end"),
        (b"\x01\0\0\0a\x00\0\0\0\x00", "more BYTES data"),
    ],
)
def test_malformed_bytes_raw_data_is_refused(raw: bytes, fragment: str) -> None:
    with pytest.raises(InvalidInput, match=fragment):
        codecs.decode_raw("x", "BYTES", [2], raw)


@pytest.mark.parametrize(
    ("datatype", "shape"),
    [("INT8", [2**62, 0]), ("INT64", [2**58, 0, 3]), ("BYTES", [2**59, 0]), ("BOOL", [0, 2**63 - 1])],
)
def test_empty_shapes_numpy_can_hold_are_accepted(datatype: str, shape: list[int]) -> None:
    assert codecs.decode_raw("x", datatype, shape, b"").shape == tuple(shape)
    assert codecs.decode_json("x", datatype, shape, []).shape == tuple(shape)


@pytest.mark.parametrize(
    ("datatype", "shape"),
    [("INT16", [2**62, 0]), ("INT64", [2**58, 0, 4]), ("BYTES", [2**60, 0]), ("BOOL", [0, 2**63])],
)
def test_shapes_numpy_cannot_hold_are_invalid_input(datatype: str, shape: list[int]) -> None:
    """Refused before numpy is asked (it would raise ValueError, a 500), whatever the data."""
    for decode in (
        lambda: codecs.decode_raw("x", datatype, shape, b""),
        lambda: codecs.decode_json("x", datatype, shape, []),
    ):
        with pytest.raises(InvalidInput, match="larger than any tensor can be"):
            decode()


def test_numpy_text_arrays_are_bytes_on_the_wire() -> None:
    assert codecs.encode_json(np.array(["a", "bc"])) == ["a", "bc"]
    assert codecs.encode_raw(np.array(["a"])) == b"\x01\0\0\0a"


def test_json_data_nested_or_flat_and_scalars() -> None:
    nested = codecs.decode_json("x", "INT32", [2, 2], [[1, 2], [3, 4]])
    flat = codecs.decode_json("x", "INT32", [2, 2], [1, 2, 3, 4])
    assert np.array_equal(nested, flat) and nested.dtype == np.int32
    assert codecs.decode_json("x", "FP64", [], 2.5).shape == ()
    assert codecs.decode_json("x", "FP32", [0, 4], []).shape == (0, 4)


def test_non_utf8_bytes_have_no_json_form() -> None:
    assert codecs.encode_json(np.array([b"\xff"], dtype=object)) is None


def test_fp16_json_is_written_as_numbers() -> None:
    assert codecs.encode_json(np.array([0.5, 2.0], dtype=np.float16)).tolist() == [0.5, 2.0]


def test_unknown_datatype_lists_the_known_ones() -> None:
    with pytest.raises(InvalidInput, match=r"unknown datatype 'FLOAT'.*'FP32'"):
        codecs.decode_json("x", "FLOAT", [1], [1.0])


def test_raw_view_shares_the_arrays_memory() -> None:
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    view = codecs.raw_view(array)
    assert isinstance(view, memoryview)
    assert np.shares_memory(np.frombuffer(view, dtype=np.float32), array)
    assert bytes(view) == codecs.encode_raw(array)
    # not already the wire layout: a copy in the right layout
    for other in (array.T, array.astype(">f4"), np.array([b"ab", b"c"], dtype=object)):
        assert bytes(codecs.raw_view(other)) == codecs.encode_raw(other)
