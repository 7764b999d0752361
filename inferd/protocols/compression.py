"""Request bodies sent compressed (``Content-Encoding: gzip`` or ``deflate``), inflated within a limit.

The body limit (``max_body_size``) is checked by the request middleware on the bytes received; a
compressed body must meet it again once inflated, or a 1 MB gzip bomb becomes a gigabyte in memory.
`inflate` checks while it inflates, chunk by chunk, so a bomb costs at most the limit and one chunk.
Every route that honours ``Content-Encoding`` inflates through here.
"""

from __future__ import annotations

import zlib

from inferd.core.errors import InvalidInput, PayloadTooLarge

#: Most bytes inflated at a time (zlib's ``max_length``): how far past the limit a bomb gets.
CHUNK = 256 * 1024
#: zlib's ``wbits`` of each encoding: gzip's header and trailer, or the zlib stream of HTTP deflate.
WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def inflate(body: bytes | memoryview, encoding: str | None, limit: int) -> bytes | memoryview:
    """``body`` as it was before ``encoding`` compressed it: `PayloadTooLarge` as soon as it grows
    past ``limit`` bytes, `InvalidInput` for data that is not ``encoding`` or an unknown encoding.
    Concatenated gzip members are one body (as `gzip.decompress` reads them)."""
    name = (encoding or "identity").strip().lower()
    if name == "identity":
        return body
    wbits = WBITS.get(name)
    if wbits is None:
        raise InvalidInput(f"unsupported Content-Encoding '{encoding}'; use gzip or deflate")
    parts: list[bytes] = []
    size, data = 0, body
    try:
        while True:
            inflater = zlib.decompressobj(wbits)
            while not inflater.eof:
                chunk = inflater.decompress(data, CHUNK)
                data = inflater.unconsumed_tail
                if not chunk and not data:
                    raise InvalidInput(f"body is not valid {name} data: it ends before its stream does")
                size += len(chunk)
                if size > limit:
                    raise PayloadTooLarge(f"request body inflates to more than the limit of {limit} bytes")
                parts.append(chunk)
            data = inflater.unused_data
            if name == "deflate" or not data:
                break
    except zlib.error as exc:
        raise InvalidInput(f"body is not valid {name} data: {exc}") from None
    return b"".join(parts)
