"""The gateway tests' upstreams (each answers with its id), reused in front of HAProxy."""

from tests.platform.gateway.conftest import alpha, beta  # noqa: F401  (fixtures)
