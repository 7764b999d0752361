"""Which host names and addresses mean this machine: the one rule behind the ``Host`` check of
servers on loopback (`inferd.server.origins`), the refusal to serve the platform beyond loopback
without tokens, and where the CLI may send the platform's generated token
(`inferd.platform.admin_token`). Standard library only, so the CLI's clients import it cheaply."""

from __future__ import annotations

import ipaddress


def is_loopback(name: str) -> bool:
    """Whether a host name or address (IPv6 with or without brackets) means this machine:
    ``localhost`` and every name under it (RFC 6761 6.3: resolvers answer them with loopback
    addresses, never with a name server's), or a loopback address."""
    name = name.lower().removesuffix(".").strip("[]")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
