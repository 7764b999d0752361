"""Keeping a target inside the folder it came with.

A platform version runs its content-addressed bundle, and a repository's model runs its own folder:
a ``target`` naming anything else (``../m1/model.py``, another deployment's bundle; ``/abs/path``;
``file:///...``; a link in the folder leading out; ``http://.../x.py`` or another storage URI,
fetched when the model starts) would run code that neither the bundle's digest nor the folder
describes, chosen by whoever wrote the target. Such a target is refused unless the operator allows
its location (``allowed_outside_targets``): a folder of this machine (``/srv/shared-models/``), a
storage URI prefix (``s3://bucket/models/``) or ``*`` for anywhere.

Every target that is not a URI is taken as a path relative to the folder, a module name too
(``main:handler`` is ``main`` of the folder as far as this check goes, and stays inside); it is
resolved, links followed, and must lie in the folder.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

from inferd.core.importer import split_target
from inferd.storage.locations import is_remote, local_path

#: An entry of ``allowed_outside_targets`` that allows every location.
ANYWHERE = "*"
#: Where a refusal says how to allow more.
SETTING = "INFERD_ALLOWED_OUTSIDE_TARGETS"


def outside_problem(
    target: str, folder: Path, allowed: Sequence[str] = (), within: str = "", home: Path | None = None
) -> str | None:
    """Why ``target``, relative to ``folder``, names something outside ``home`` (``folder`` itself
    by default) that ``allowed`` does not cover, or None when it may run. ``within`` names the
    folder in the message (``the version's bundle``)."""
    if ANYWHERE in allowed:
        return None
    within = within or "its folder"
    module = target if is_remote(target) else split_target(target)[0]
    if is_remote(module):
        if any(_uri_within(module, prefix) for prefix in allowed if is_remote(prefix)):
            return None
        return (
            f"target {_short(target)!r} is a URI: what runs must come from {within}; "
            f"an operator may allow its location with {SETTING}"
        )
    path = local_path(module)
    if path is None or "\0" in module:
        return f"target {_short(target)!r} is not a path"
    found = Path(os.path.realpath(folder / path))  # an absolute path stays itself; links are followed
    if found.is_relative_to(os.path.realpath(home or folder)):
        return None
    for prefix in allowed:
        place = local_path(prefix)
        if not is_remote(prefix) and place is not None and place.is_absolute():
            if found.is_relative_to(os.path.realpath(place)):
                return None
    how = "is" if path.is_absolute() else "resolves to"
    return (
        f"target {_short(target)!r} {how} a path outside {within}: what runs must come from "
        f"{within}; an operator may allow a folder with {SETTING}"
    )


def _uri_within(uri: str, prefix: str) -> bool:
    """``uri`` lies under ``prefix``: the same scheme and host, and the prefix's path segments first
    (``s3://b/models`` covers ``s3://b/models/x``, not ``s3://b/models-2``); a URI with ``.`` or
    ``..`` segments (percent-encoded too) or credentials never does."""
    found, under = urlsplit(uri), urlsplit(prefix)
    if found.username or found.password or found.query or found.fragment:
        return False
    if (found.scheme.lower(), found.netloc.lower()) != (under.scheme.lower(), under.netloc.lower()):
        return False
    parts = unquote(found.path).split("/")
    if any(part in (".", "..") for part in parts):
        return False
    wanted = [part for part in unquote(under.path).split("/") if part]
    return [part for part in parts if part][: len(wanted)] == wanted


def _short(text: str) -> str:
    return text if len(text) <= 120 else f"{text[:60]}...{text[-40:]}"
