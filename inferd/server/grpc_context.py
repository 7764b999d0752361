"""What a servicer sees of a call on the native gRPC server (`inferd.server.grpc_native`): the part of
``grpc.aio.ServicerContext`` inferd's servicers and interceptors use, so the same servicer code runs
on either server.

`abort` raises `Aborted`, which the server turns into the call's status, as grpc.aio does with its
own exception; `code` is what the tracing interceptor reads after a call. Metadata is decoded from
the request's header block only when asked for (most calls never ask).
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Sequence
from typing import Any, NoReturn

from inferd.protocols.grpc_status import StatusCode
from inferd.protocols.h2.hpack_out import Header

Metadata = tuple[tuple[str, str | bytes], ...]
#: A status code: grpcio's ``grpc.StatusCode`` or inferd's copy of it (`grpc_status`); the server
#: reads only its value, (the number on the wire, a description), and its name.
Code = Any
#: Request headers that are HTTP/2's or gRPC's own, not the caller's metadata.
RESERVED = frozenset((b"content-type", b"te", b"grpc-timeout", b"grpc-encoding", b"grpc-accept-encoding"))


class Aborted(Exception):
    """The servicer ended its call with ``code`` and ``details`` (`NativeContext.abort`)."""

    def __init__(self, code: Code, details: str) -> None:
        super().__init__(details)
        self.code, self.details = code, details


def metadata_of(headers: Sequence[Header]) -> Metadata:
    """The caller's metadata in a request's header block: names as text, ``-bin`` values decoded."""
    pairs: list[tuple[str, str | bytes]] = []
    for name, value in headers:
        if name.startswith(b":") or name in RESERVED:
            continue
        key = name.decode("latin-1")
        if key.endswith("-bin"):
            try:
                pairs.append((key, base64.b64decode(value + b"=" * (-len(value) % 4))))
            except binascii.Error:
                continue
        else:
            pairs.append((key, value.decode("latin-1")))
    return tuple(pairs)


class NativeContext:
    """One call's context: its metadata, deadline and peer in; its status and trailers out."""

    __slots__ = (
        "_code",
        "_details",
        "_metadata",
        "deadline",
        "headers",
        "initial",
        "peer_address",
        "trailers",
    )

    def __init__(self, headers: Sequence[Header], deadline: float | None, peer: str) -> None:
        self.headers, self.deadline, self.peer_address = headers, deadline, peer
        self._metadata: Metadata | None = None
        self._code: Code | None = None
        self._details = ""
        self.trailers: Metadata = ()
        self.initial: Metadata = ()

    async def abort(self, code: Code, details: str = "", trailing_metadata: Metadata = ()) -> NoReturn:
        if code.value == StatusCode.OK.value:
            raise ValueError("abort() needs a status other than OK")
        self._code, self._details = code, details
        if trailing_metadata:
            self.trailers = tuple(trailing_metadata)
        raise Aborted(code, details)

    def invocation_metadata(self) -> Metadata:
        if self._metadata is None:
            self._metadata = metadata_of(self.headers)
        return self._metadata

    async def send_initial_metadata(self, metadata: Metadata) -> None:
        """Sent with the answer's headers (a unary answer's headers leave with its message)."""
        self.initial = tuple(metadata)

    def set_trailing_metadata(self, metadata: Metadata) -> None:
        self.trailers = tuple(metadata)

    def set_code(self, code: Code) -> None:
        self._code = code

    def set_details(self, details: str) -> None:
        self._details = details

    def code(self) -> Code | None:
        return self._code

    def details(self) -> str:
        return self._details

    def peer(self) -> str:
        return self.peer_address

    def time_remaining(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"the native gRPC server's context has no {name}() (only grpc.aio's has)")
