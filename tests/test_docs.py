"""The docs stay true to the tree: the generated settings reference matches the settings'
docstrings, and every file the README and docs name is there."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers import ROOT


def test_docs_settings_md_is_generated_from_the_current_settings() -> None:
    checked = subprocess.run(
        [sys.executable, "scripts/gen_settings_doc.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr


def test_every_setting_is_documented() -> None:
    assert "(undocumented)" not in (ROOT / "docs" / "settings.md").read_text()


#: A path of this tree as README and docs name it (``inferd/core/keeper.py``, ``docs/settings.md``),
#: not part of a URL or of another path; ``<name>`` stands for any one name.
TREE_PATH = re.compile(r"(?<![\w/.:-])(?:inferd|docs|scripts|tests|bench|examples)/[\w./<>-]*")
#: A Markdown link's target: a path relative to the page, without its ``#anchor``.
RELATIVE_LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)#\s]+)")
#: One entry of README's layout block: a folder or file of the tree, and what it says is there.
LAYOUT_ENTRY = re.compile(r"^(inferd\S*) +(.*(?:\n {19}.*)*)", re.MULTILINE)


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def exists(path: str) -> bool:
    """``path`` is in the tree; ``<name>`` matches any one folder or file."""
    pattern = re.sub(r"<[^>]+>", "*", path.rstrip("/.,"))
    return any(ROOT.glob(pattern)) if "*" in pattern else (ROOT / pattern).exists()


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_every_path_the_docs_name_exists(page: Path) -> None:
    """The README's map of where a change goes, and every page naming a file, name files that are
    there: a module that moves fails here until the docs say where it went."""
    text = page.read_text()
    named = [path for path in TREE_PATH.findall(text) if not exists(path)]
    linked = [link for link in RELATIVE_LINK.findall(text) if not (page.parent / link).exists()]
    assert named == [], f"{page.name} names paths that are not in the tree"
    assert linked == [], f"{page.name} links to pages that are not there"


def test_the_readme_layout_names_every_package_and_only_files_that_are_there() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Layout", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    entries = dict(LAYOUT_ENTRY.findall(block))
    packages = {f"inferd/{path.parent.name}" for path in (ROOT / "inferd").glob("*/__init__.py")}
    assert packages <= set(entries), "a package of inferd/ is missing from README's layout"
    for entry, said in entries.items():
        for module in re.findall(r"\b\w+\.py\b", said):
            assert list((ROOT / entry).rglob(module)), f"README's layout puts {module} in {entry}"
