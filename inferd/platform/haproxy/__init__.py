"""HAProxy as the endpoints' data path: one backend per endpoint, one server per service; weights change
through HAProxy's runtime API (no reload), a new or removed endpoint reloads the master process
seamlessly (its listening socket is passed on)."""

from inferd.platform.haproxy.path import HAProxyPath

__all__ = ["HAProxyPath"]
