"""The one rule for a served model's name, checked wherever a name comes from (``--name``, a config
file, a name derived from the target), so a model is never registered under a name no protocol
path can reach.

A name is a path segment of every protocol (``/v2/models/<name>/infer``, DEEPaaS's
``/v2/models/<name>/predict/``): a ``/`` would split it, ``.`` and ``..`` are removed by clients
that normalise URLs, and an empty name is no segment at all. Letters, digits, ``_``, ``.`` and
``-``, starting with a letter or digit, are safe in every path, header and Prometheus label.
"""

from __future__ import annotations

import re

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,254}")
RULE = "letters, digits, '_', '.' and '-', starting with a letter or digit, at most 255 characters"


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a model's name, or None when it can."""
    if NAME_PATTERN.fullmatch(name):
        return None
    return f"model name {name!r} cannot be used in a URL path: use {RULE}"
