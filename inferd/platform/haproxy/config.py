"""haproxy.cfg for the endpoints: requests to ``/e/NAME/...`` go to backend ``ep_NAME`` with the
prefix removed, any other to a 404 in inferd's JSON error shape; with tokens, a request without one
of them is answered 401 before it is routed. On loopback (or with allowed hosts), a request whose
``Host`` is not a loopback name or an allowed one is answered 403 first, as the embedded gateway does
(`inferd.server.origins.HostPolicy`): a page on a rebound DNS name reaches no endpoint.

gRPC calls (HTTP/2, on a frontend of their own at ``grpc_port``) go to backend ``grpc_NAME`` by their
``inferd-endpoint`` header, or to the only endpoint when there is one and the header is missing;
its servers are the services' gRPC ports, spoken to in HTTP/2. HAProxy's own answers to them are
gRPC statuses (``grpc-status`` in a trailers-only answer): UNAUTHENTICATED, NOT_FOUND for an unknown
endpoint, UNAVAILABLE naming the endpoint when its service cannot be reached."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: A backend's servers: ("host:port", weight) pairs (a service's replicas each a server).
Routes = Sequence[tuple[str, int]]


@dataclass(frozen=True)
class Frontend:
    host: str
    port: int
    admin_socket: Path
    #: A file of the accepted ``Authorization`` values (``Bearer <token>``, one a line); None: open.
    tokens: Path | None = None
    #: Sent to the services as the Authorization header, when they take tokens too.
    upstream_authorization: str | None = None
    max_body_size: int = 64 * 1024 * 1024
    timeout_seconds: int = 300
    #: Where gRPC calls are taken (HTTP/2 without TLS); None: not at all.
    grpc_port: int | None = None
    #: The ``Host`` values answered (`host_pattern`); None: any.
    hosts: str | None = None


#: HAProxy's own answers, in inferd's JSON error shape.
ERRORS = {
    502: "its service broke off its answer",
    503: "its service is unavailable",
    504: "its service did not answer in time",
}


def server_name(upstream: str) -> str:
    """A server's name in its backend, from its ``host:port``."""
    return "s_" + upstream.replace(".", "_").replace(":", "_")


def backend_name(endpoint: str) -> str:
    return f"ep_{endpoint}"


def grpc_backend_name(endpoint: str) -> str:
    return f"grpc_{endpoint}"


#: HAProxy's own answers to gRPC calls: a status its servers' failures stand for, and what it says.
GRPC_ERRORS = {
    502: (14, "its service broke off its answer"),
    503: (14, "its service is unavailable"),
    504: (4, "its service did not answer in time"),
}


#: A DNS label, as a pattern (what a name under an allowed suffix may add, one label at a time).
LABEL = "[a-z0-9_-]+"
#: The loopback names and addresses: localhost and names under it (RFC 6761), 127.0.0.0/8, ::1.
LOOPBACK = (
    rf"({LABEL}\.)*localhost",
    r"127(\.[0-9]{1,3}){3}",
    r"\[(0{0,4}:){2,7}0{0,3}1\]",
)
UNKNOWN_HOST = (
    "host is not a name this server answers (loopback names and INFERD_ALLOWED_HOSTS): "
    "list it in INFERD_ALLOWED_HOSTS to allow it"
)


def host_pattern(allowed: Iterable[str]) -> str | None:
    """A regular expression (matched without case) of the ``Host`` values answered: loopback names and
    ``allowed`` (``name``, ``.suffix`` for it and its subdomains), with or without a port; None when
    ``allowed`` has ``*``. Names with other characters than a host name's are left out."""
    names = [name.strip().lower().removesuffix(".") for name in allowed]
    if "*" in names:
        return None
    choices = list(LOOPBACK)
    for name in names:
        if not re.fullmatch(r"\.?[a-z0-9_.-]+", name):
            continue
        if name.startswith("."):
            choices.append(rf"({LABEL}\.)*{re.escape(name[1:])}")
        else:
            choices.append(re.escape(name))
    return rf"^({'|'.join(choices)})\.?(:[0-9]*)?$"


NO_ENDPOINT = "no such endpoint: name one in the inferd-endpoint metadata"


def _grpc_status(code: int, message: str) -> str:
    """An ``http-request return`` of a trailers-only gRPC answer."""
    return f'status 200 content-type application/grpc hdr grpc-status {code} hdr grpc-message "{message}"'


def render(
    frontend: Frontend, endpoints: Mapping[str, Routes], grpc: Mapping[str, Routes] | None = None
) -> str:
    """The configuration: ``endpoints`` (name → HTTP upstreams and weights) and, with a
    ``grpc_port``, ``grpc`` (name → the same services' gRPC addresses and weights)."""
    lines = [
        "global",
        # half the cores: the services on this machine need the others (on 2 cores, a second thread
        # only competed with them: 0.85x direct req/s with two, 0.94x with one)
        f"    nbthread {max(1, (os.cpu_count() or 2) // 2)}",
        f"    stats socket {frontend.admin_socket} mode 600 level admin expose-fd listeners",
        "    stats timeout 30s",
        "",
        "defaults",
        "    mode http",
        "    option http-keep-alive",
        "    http-reuse always",
        "    timeout connect 5s",
        "    timeout client 60s",
        f"    timeout server {frontend.timeout_seconds}s",
        "    timeout http-request 30s",
        *(
            f'    http-error status {status} content-type application/json string \'{{"error": "{said}"}}\''
            for status, said in ERRORS.items()
        ),
        "",
        "frontend gateway",
        f"    bind {frontend.host}:{frontend.port}",
        "    http-request set-var(txn.endpoint) path,field(3,/) if { path_beg /e/ }",
    ]
    if frontend.hosts is not None:  # first: a rebound page learns nothing, not even a 401 or 413
        lines.append(
            "    http-request return status 403 content-type application/json "
            f'string \'{{"error": "{UNKNOWN_HOST}"}}\' '
            f"unless {{ req.hdr_cnt(host) eq 0 }} || {{ req.hdr(host) -m reg -i '{frontend.hosts}' }}"
        )
    lines.append(
        "    http-request deny deny_status 413 "
        f"if {{ req.hdr_val(content-length) gt {frontend.max_body_size} }}"
    )
    if frontend.tokens is not None:
        lines.append(
            f"    http-request return status 401 content-type application/json "
            f'string \'{{"error": "a bearer token is needed"}}\' hdr www-authenticate Bearer '
            f"unless {{ req.hdr(authorization) -m str -f {frontend.tokens} }}"
        )
    lines += [
        "    use_backend ep_%[var(txn.endpoint)] if { var(txn.endpoint) -m found }",
        "    default_backend no_endpoint",
        "",
        "backend no_endpoint",
        "    http-request return status 404 content-type application/json "
        'string \'{"error": "no such endpoint"}\'',
    ]
    for name, routes in sorted(endpoints.items()):
        lines += [
            "",
            f"backend {backend_name(name)}",
            "    balance random",
            "    http-request set-path %[path,regsub(^/e/[^/]*/?,/)]",
        ]
        if frontend.upstream_authorization is not None:
            lines.append(f'    http-request set-header authorization "{frontend.upstream_authorization}"')
        lines.append("    retry-on conn-failure")
        for upstream, weight in routes:
            lines.append(f"    server {server_name(upstream)} {upstream} weight {weight}")
    if frontend.grpc_port is not None:
        lines += _grpc_sections(frontend, grpc or {}, sorted(endpoints))
    return "\n".join(lines) + "\n"


def _grpc_sections(frontend: Frontend, grpc: Mapping[str, Routes], names: list[str]) -> list[str]:
    only = grpc_backend_name(names[0]) if len(names) == 1 else "grpc_no_endpoint"
    lines = [
        "",
        "frontend grpc_gateway",
        f"    bind {frontend.host}:{frontend.grpc_port} proto h2",
    ]
    if frontend.tokens is not None:
        refusal = _grpc_status(16, "a bearer token is needed")
        allowed = f"{{ req.hdr(authorization) -m str -f {frontend.tokens} }}"
        lines.append(f"    http-request return {refusal} unless {allowed}")
    if names:  # a backend name that does not exist would send the call to the default backend
        lines += [
            f"    acl known_endpoint req.hdr(inferd-endpoint) -m str {' '.join(names)}",
            "    use_backend grpc_%[req.hdr(inferd-endpoint)] if known_endpoint",
        ]
    lines += [
        "    use_backend grpc_no_endpoint if { req.hdr(inferd-endpoint) -m found }",
        f"    default_backend {only}",
        "",
        "backend grpc_no_endpoint",
        f"    http-request return {_grpc_status(5, NO_ENDPOINT)}",
    ]
    for name in names:
        lines += ["", f"backend {grpc_backend_name(name)}", "    balance random"]
        if frontend.upstream_authorization is not None:
            lines.append(f'    http-request set-header authorization "{frontend.upstream_authorization}"')
        lines.append("    retry-on conn-failure")
        for status, (code, said) in GRPC_ERRORS.items():
            lines.append(
                f"    http-error status {status} content-type application/grpc "
                f"hdr grpc-status {code} hdr grpc-message \"endpoint '{name}': {said}\""
            )
        for address, weight in grpc.get(name, ()):
            lines.append(f"    server {server_name(address)} {address} proto h2 weight {weight}")
    return lines
