"""Sockets bound once by whoever owns the ports, so every worker serves the same ones."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import NamedTuple

from inferd.core.errors import ListenError


def bind_http(host: str, port: int) -> socket.socket:
    """A listening TCP socket; port 0 picks a free one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    with listen_errors(host, port, sock):
        sock.bind((host, port))
        sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def reserve_port(host: str, port: int) -> socket.socket:
    """A bound, non-listening socket holding ``port`` (0 picks one) for the workers' gRPC servers,
    which bind it again with SO_REUSEPORT and let the kernel spread connections.

    It binds without SO_REUSEPORT, which fails while any socket holds the port, a running server's
    included; only then is SO_REUSEPORT set, so the workers can join. Another inferd server does the
    same exclusive bind first (or binds its single gRPC server without SO_REUSEPORT), so it cannot
    silently share this server's port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    with listen_errors(host, port, sock):
        sock.bind((host, port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    return sock


class Bound(NamedTuple):
    """The sockets a server holds before it loads anything; None where that port is not served."""

    http: socket.socket
    grpc: socket.socket | None
    metrics: socket.socket | None


#: The option setting each port, named when it cannot be had.
PORT_OPTIONS = {"http": "--port", "grpc": "--grpc-port", "metrics": "--metrics-port"}


def bind_ports(host: str, http: int, grpc: int | None, metrics: int | None) -> Bound:
    """The HTTP (and metrics) port listening and the gRPC port held (`reserve_port`), bound before any
    model loads, so a port in use ends start-up at once, naming every port that cannot be had and the
    options that choose others, not only the first one after the models loaded."""
    wanted = {"http": http, "grpc": grpc, "metrics": metrics}
    bound: dict[str, socket.socket | None] = dict.fromkeys(wanted)
    failures: list[str] = []
    with ExitStack() as held:
        for kind, port in wanted.items():
            if port is None:
                continue
            try:
                bind = reserve_port if kind == "grpc" else bind_http
                bound[kind] = held.enter_context(bind(host, port))
            except ListenError as exc:
                failures.append(f"{exc.message} ({PORT_OPTIONS[kind]} chooses another)")
        if failures:
            raise ListenError("; ".join(failures))
        held.pop_all()
    http_socket = bound["http"]
    assert http_socket is not None
    return Bound(http_socket, bound["grpc"], bound["metrics"])


def free_ports(host: str, count: int = 1) -> list[int]:
    """``count`` distinct ports free on ``host`` now, for a server that binds them later (each held
    while the next is picked, so none is given twice)."""
    with ExitStack() as held:
        return [port_of(held.enter_context(bind_http(host, 0))) for _ in range(count)]


def port_of(sock: socket.socket) -> int:
    port: int = sock.getsockname()[1]
    return port


@contextmanager
def listen_errors(host: str, port: int, sock: socket.socket | None = None) -> Iterator[None]:
    """Binding failures as a ListenError naming the address (and the socket closed)."""
    try:
        yield
    except (OSError, RuntimeError) as exc:  # grpc reports a failed bind as RuntimeError
        if sock is not None:
            sock.close()
        reason = (
            exc.strerror if isinstance(exc, OSError) and exc.strerror else "address in use or not allowed"
        )
        raise ListenError(f"cannot listen on {host}:{port}: {reason}") from None
