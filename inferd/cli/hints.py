"""What to type instead, when ``inferd serve`` cannot load a target the way it was given.

The loaders' errors say what went wrong with the target as the server saw it (an absolute path, a
class guessed from a folder name); a new user needs the command that works. Seldon names a component
by its class, run from the component's folder (``inferd serve MyModel --dialect seldon``), which
neither a file nor a project folder says by itself.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

CLASS = re.compile(r"^class\s+([A-Za-z_]\w*)", re.MULTILINE)
PROJECT_FILE = "inferd.yaml"


def instead(target: str | None, dialect: str | None) -> str | None:
    """A command serving what ``target`` most likely meant, or None when there is nothing to suggest.
    ``target`` is as typed (relative paths stay relative, so the suggestion can be typed as shown)."""
    if not target or ":" in target:
        return None
    path = Path(target)
    if path.is_dir() and dialect == "seldon":
        classes = [file.stem for file in sorted(path.glob("*.py")) if file.stem in _classes(file)]
        if not classes and (path / PROJECT_FILE).is_file():  # a project of another convention
            return f"inferd serve {shlex.quote(target)} (its {PROJECT_FILE} names its convention)"
        return _seldon(path, classes[0] if classes else "ClassName")
    if path.is_file() and path.suffix == ".py":
        classes = _classes(path)
        if path.stem in classes:  # Seldon's convention: the module is named after its class
            return _seldon(path.parent, path.stem)
        if classes:
            return f"inferd serve {shlex.quote(f'{target}:{classes[0]}')} (name the class to serve)"
    return None


def _seldon(folder: Path, name: str) -> str:
    command = f"inferd serve {name} --dialect seldon"
    if folder != Path("."):
        command = f"cd {shlex.quote(str(folder))} && {command}"
    suggestion = f"{command} (Seldon serves a component by its class name, from its folder)"
    if (folder / PROJECT_FILE).is_file():
        suggestion += f", or inferd serve {shlex.quote(str(folder))} (as its {PROJECT_FILE} says)"
    return suggestion


def _classes(file: Path) -> list[str]:
    try:
        return CLASS.findall(file.read_text(errors="replace"))
    except OSError:
        return []
