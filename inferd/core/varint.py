"""Protobuf's base-128 varint, on its own: OTLP spans (`inferd.core.otlp`) and HPACK integers
(`inferd.protocols.h2.hpack_out`) both write it, and a server that serves gRPC without tracing must
not import the tracing modules to get it."""

from __future__ import annotations


def varint(value: int) -> bytes:
    """``value`` (>= 0) as a little-endian base-128 varint."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
