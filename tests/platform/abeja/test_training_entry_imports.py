"""A training job's launcher (`inferd.platform.abeja.training_entry`) imports nothing before the
handler that a bare ``python -c`` of it does not (``typing``, ``json``, ``traceback``, ``importlib``'s
package): a job's start-up is measured against that (bench/training_startup.py, at most 1.5x)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from inferd.platform.abeja import training_entry

TRAIN = """
import sys

SEEN = sorted(sys.modules)  # what was there when the handler's module began


def handler(context):
    print("SEEN", " ".join(SEEN))
    print("DATASETS", dict(context.datasets))
"""


def _modules(folder: Path, datasets: str) -> tuple[set[str], str]:
    env = {"PATH": "/usr/bin:/bin", "TRAINING_JOB_DATASETS": datasets}
    done = subprocess.run(
        [sys.executable, training_entry.__file__, "train:handler"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    return set(lines["SEEN"].split()), lines["DATASETS"]


def test_the_launcher_imports_no_more_than_python_c(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    seen, datasets = _modules(tmp_path, "{}")
    assert datasets == "{}"
    assert not {"typing", "traceback", "importlib", "json"} & seen, seen
    plain = subprocess.run(
        [sys.executable, "-c", "import sys; print(' '.join(sorted(sys.modules)))"],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    extra = seen - set(plain.stdout.split()) - {"train", "__main__", "__future__"}
    assert extra == set(), extra


def test_datasets_still_reach_the_context(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    _, datasets = _modules(tmp_path, json.dumps({"train": "1111111111111"}))
    assert datasets == "{'train': '1111111111111'}"
