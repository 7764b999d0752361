"""``inferd train-local``: a training handler run once in the command's process from the current
folder, as ``abeja training train-local`` ran it in Docker: its variables, datasets and result folder;
a handler that raises exits 1 saying why."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

from tests.servers import inferd_command, with_this_tree

TRAIN = textwrap.dedent("""
    import json
    import os
    from pathlib import Path


    def handler(context):
        if os.environ.get("MODE") == "raise":
            raise RuntimeError("diverged")
        names = ("TRAINING_JOB_DEFINITION_NAME", "TRAINING_JOB_ID", "ABEJA_ORGANIZATION_ID", "LR")
        seen = {"datasets": context.datasets, **{name: os.environ.get(name) for name in names}}
        (Path(os.environ["ABEJA_TRAINING_RESULT_DIR"]) / "model.json").write_text(json.dumps(seen))
""")


def _train_local(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = with_this_tree({**os.environ, "HOME": str(folder)})
    return subprocess.run(
        inferd_command("train-local", *args), cwd=folder, env=env, capture_output=True, text=True, timeout=120
    )


def test_train_local_runs_the_handler_with_its_result_folder(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    done = _train_local(
        tmp_path,
        "-e",
        "LR:0.01",
        "--datasets",
        "train:1111111111111",
        "--result",
        "out",
        "--name",
        "trainer",
        "-o",
        "1234567890123",
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads((tmp_path / "out" / "model.json").read_text())
    assert seen == {
        "datasets": {"train": "1111111111111"},
        "TRAINING_JOB_DEFINITION_NAME": "trainer",
        "TRAINING_JOB_ID": "local",
        "ABEJA_ORGANIZATION_ID": "1234567890123",
        "LR": "0.01",
    }
    failed = _train_local(tmp_path, "-e", "MODE:raise")
    assert failed.returncode == 1 and "[error] the handler raised RuntimeError: diverged" in failed.stderr
    bad = _train_local(tmp_path, "-e", "no-colon")
    assert bad.returncode != 0 and "KEY:VALUE" in bad.stderr + bad.stdout
