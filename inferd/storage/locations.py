"""Telling a storage URI from a local path. Any ``scheme://`` counts as a URI, so a typo'd or
unsupported scheme is reported as such rather than looked for as a file of that name."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

from inferd.core.importer import split_target

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def scheme(text: str) -> str | None:
    """The lower-cased scheme of ``text`` (``"s3"``), or None for a plain path."""
    match = _SCHEME.match(text)
    return match.group(1).lower() if match else None


def is_remote(text: str) -> bool:
    """Whether ``text`` is a URI that must be fetched (any scheme but ``file``)."""
    found = scheme(text)
    return found is not None and found != "file"


def local_path(text: str) -> Path | None:
    """A plain path or ``file://`` URI as a Path, None for a remote URI. ``file:///abs/x`` and
    ``file://localhost/abs/x`` are absolute; ``file://rel/x`` is taken as the relative path it looks
    like, as fsspec does, rather than as a host name."""
    found = scheme(text)
    if found is None:
        return Path(text)
    if found != "file":
        return None
    rest = text[len("file://") :]
    if rest.startswith("localhost/"):
        rest = rest[len("localhost") :]
    return Path(unquote(rest))


def plain_target(target: str) -> str:
    """``target`` with a ``file://`` URI written as the path it names, its ``:Class`` kept; any other
    target as it is. Taken as a path, the URI would lose a slash (``Path("file:///abs")`` is
    ``file:/abs``)."""
    if scheme(target) != "file":
        return target
    uri, attribute = split_target(target)
    return str(local_path(uri)) + (f":{attribute}" if attribute else "")
