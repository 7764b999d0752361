"""Ids given to ``inferd platform`` verbs by their beginning, as git takes a commit's: ``svc-3f`` or
``3f`` for ``svc-3f0c51a2b7d4``, when no other service's id begins so. The quick start has people
type ids from one command's table into the next (``route``, ``logs``, ``start``...); twelve hex
digits are easy to get wrong and were cut in 80-column tables.

The control API takes whole ids only (a script's request names one thing, whatever is created
later); the CLI lists the ids it could mean and sends the one that matches. A whole id is sent as it
is, unlisted. A beginning that matches several ids is refused naming them (exit 2: the user gives
more of it), one that matches none as the API refuses an unknown id (exit 1)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from inferd.cli.common import fail
from inferd.cli.control_calls import _call, _quoted

#: A whole id: the kind's three letters and twelve hex digits (`inferd.platform.records.new_id`).
WHOLE = re.compile(r"[a-z]{3}-[0-9a-f]{12}")
SERVICE, VERSION = "svc", "ver"
NAMES = {SERVICE: "service", VERSION: "version"}


def matching(kind: str, given: str, ids: Iterable[str], where: str = "") -> str:
    """The one id of ``ids`` that ``given`` begins (with or without ``kind-``)."""
    wanted = given if given.startswith(f"{kind}-") else f"{kind}-{given}"
    found = sorted({found for found in ids if found.startswith(wanted)})
    name = NAMES.get(kind, kind)
    if len(found) == 1:
        return found[0]
    if not found:
        fail(f"no {name} whose id begins with '{given}'{where}", code=1)
    fail(f"'{given}' begins the ids of {len(found)} {name}s{where}: {', '.join(found)}; give more of it")


def service_id(url: str, given: str, deployment: str | None = None) -> str:
    """The id of the service ``given`` names: of ``deployment``, else of any deployment."""
    if WHOLE.fullmatch(given):
        return given
    if deployment is not None:
        services: list[Any] = _call(url, "GET", f"/deployments/{_quoted(deployment)}/services")
        return matching(SERVICE, given, (s["id"] for s in services), f" in deployment {deployment}")
    services = []
    for found in _call(url, "GET", "/deployments"):
        services += _call(url, "GET", f"/deployments/{_quoted(found['id'])}/services")
    return matching(SERVICE, given, (s["id"] for s in services))


def version_id(url: str, deployment: str, given: str) -> str:
    """The id of the version of ``deployment`` that ``given`` names."""
    if WHOLE.fullmatch(given):
        return given
    versions: list[Any] = _call(url, "GET", f"/deployments/{_quoted(deployment)}/versions")
    return matching(VERSION, given, (v["id"] for v in versions), f" in deployment {deployment}")
