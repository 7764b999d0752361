"""``inferd init DIR --dialect D``: a new project in one command, for any of the conventions inferd
serves, that ``inferd serve DIR`` serves at once (model code, ``inferd.yaml``, requirements, a test,
a README and a ``sample.json`` for ``inferd call``).

Templates are package data under ``templates/<dialect>/``; ``${name}``, ``${package}`` and
``${title}`` in their text and paths are filled in, and a ``.tmpl`` suffix is dropped (it keeps the
template code out of the linters' and test runners' way).
"""

from __future__ import annotations

import re
from pathlib import Path
from string import Template

TEMPLATES = Path(__file__).resolve().parent / "templates"
DIALECTS = ("native", "seldon", "deepaas", "cortex", "abeja")
SUFFIX = ".tmpl"


class ScaffoldError(Exception):
    """The project cannot be written (an unknown dialect, a folder that is not empty)."""


def names(folder: Path) -> dict[str, str]:
    """The model's served name (the folder's, lower case), a Python package name and a title."""
    name = re.sub(r"[^a-z0-9]+", "-", folder.resolve().name.lower()).strip("-") or "model"
    package = re.sub(r"\W", "_", name.replace("-", "_"))
    return {"name": name, "package": package if package[0].isalpha() else f"m_{package}", "title": name}


def create(folder: Path, dialect: str) -> list[Path]:
    """Write the project; returns the files written. An existing non-empty folder is left alone."""
    if dialect not in DIALECTS:
        raise ScaffoldError(f"unknown dialect {dialect!r}; choose one of {', '.join(DIALECTS)}")
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ScaffoldError(f"{folder} exists and is not an empty folder")
    values = names(folder)
    source = TEMPLATES / dialect
    written = []
    for template in sorted(path for path in source.rglob("*") if path.is_file()):
        relative = Template(str(template.relative_to(source)).removesuffix(SUFFIX)).substitute(values)
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(Template(template.read_text()).substitute(values))
        written.append(target)
    return written
