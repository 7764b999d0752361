"""The framed messages between an isolated worker and its model process, over a socket pair.

A frame is an 8-byte big-endian length and a pickle (protocol 5) of a tuple whose first item names
its kind. Both ends are inferd's own code; user code never reads or writes frames.
"""

from __future__ import annotations

import asyncio
import pickle
import struct
from typing import Any

_LENGTH = struct.Struct(">Q")


def write_frame(writer: asyncio.StreamWriter, *message: Any) -> None:
    """Queue one frame; a single `write` keeps frames of concurrent tasks whole."""
    data = pickle.dumps(message, protocol=5)
    writer.write(_LENGTH.pack(len(data)) + data)


async def read_frame(reader: asyncio.StreamReader) -> tuple[Any, ...] | None:
    """The next frame, or None once the other end is gone."""
    try:
        (length,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
        message: tuple[Any, ...] = pickle.loads(await reader.readexactly(length))
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    return message
