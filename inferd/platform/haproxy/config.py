"""haproxy.cfg for the endpoints: requests to ``/e/NAME/...`` go to backend ``ep_NAME`` with the
prefix removed, any other to a 404 in inferd's JSON error shape; with tokens, a request without one
of them is answered 401 before it is routed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from inferd.platform.datapath import Routes


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


def render(frontend: Frontend, endpoints: Mapping[str, Routes]) -> str:
    lines = [
        "global",
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
        "    http-request deny deny_status 413 "
        f"if {{ req.hdr_val(content-length) gt {frontend.max_body_size} }}",
    ]
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
    return "\n".join(lines) + "\n"
