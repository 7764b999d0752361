"""The generated settings reference matches the settings' docstrings."""

from __future__ import annotations

import subprocess
import sys

from tests.servers import ROOT


def test_docs_settings_md_is_generated_from_the_current_settings() -> None:
    checked = subprocess.run(
        [sys.executable, "scripts/gen_settings_doc.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr


def test_every_setting_is_documented() -> None:
    assert "(undocumented)" not in (ROOT / "docs" / "settings.md").read_text()
