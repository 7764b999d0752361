"""``inferd init`` for every dialect: the project is served at once by ``inferd serve DIR``, answers
``inferd call NAME --input sample.json`` over its dialect's protocol, is listed by ``inferd models``,
and its own generated test passes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferd.cli import app
from tests.servers import ROOT, serve, with_this_tree

#: dialect → what the scaffold's model answers to its sample.json.
ANSWERS = {
    "native": lambda body: body["outputs"][0]["data"] == [1.0, 2.0, 3.0],
    "seldon": lambda body: (
        body["data"]["ndarray"] == [[2.0, 4.0, 6.0]] and body["meta"]["tags"]["factor"] == 2
    ),
    "deepaas": lambda body: body == {"status": "OK", "predictions": {"result": 4.5}},
    "cortex": lambda body: body == {"label": "medium", "size": 6.0},
    "abeja": lambda body: body == {"words": 3, "text": "hello from abeja"},
}


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = with_this_tree(dict(os.environ))
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("dialect", list(ANSWERS))
def test_a_new_project_serves_answers_and_passes_its_own_test(dialect: str, tmp_path: Path) -> None:
    project = tmp_path / f"my-{dialect}"
    made = CliRunner().invoke(app, ["init", str(project), "--dialect", dialect])
    assert made.exit_code == 0, made.output
    assert {"README.md", "inferd.yaml", "requirements.txt", "sample.json"} <= {
        p.name for p in project.iterdir()
    }
    assert any(path.name.startswith("test_") for path in project.iterdir())
    name = f"my-{dialect}"
    with serve(str(project), "--no-grpc", "--data-dir", str(tmp_path / "state")) as server:
        assert server.models == [name]
        sample = str(project / "sample.json")
        called = CliRunner().invoke(
            app, ["call", name, "--url", server.http_url, "--input", sample, "--json"]
        )
        assert called.exit_code == 0, called.output
        assert ANSWERS[dialect](json.loads(called.stdout)), called.stdout
        listed = CliRunner().invoke(app, ["models", "--url", server.http_url, "--json"])
        [model] = json.loads(listed.stdout)["models"]
        assert model["name"] == name and model["dialect"] == dialect and model["requests"]["ok"] == 1
    tested = run(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(project), cwd=project)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "passed" in tested.stdout


#: The commands ``inferd init`` prints after the files it wrote.
NEXT = re.compile(r"Next: inferd serve (?P<folder>\S+), then inferd (?P<call>call .+) \(see the README\)")


@pytest.mark.parametrize("dialect", list(ANSWERS))
def test_the_next_commands_init_prints_work_as_printed(dialect: str, tmp_path: Path) -> None:
    """``inferd init`` ends with ``Next: inferd serve DIR, then inferd call ...``: run in the folder
    init ran in, with the ports they name (Seldon's 9000, DEEPaaS's 5000, 8080 otherwise), the call
    gets the scaffold's answer (Seldon and DEEPaaS printed a call to 8080: connection refused)."""
    made = run(sys.executable, "-m", "inferd", "init", f"my-{dialect}", "--dialect", dialect, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    printed = NEXT.search(" ".join(made.stderr.split()))
    assert printed, made.stderr
    env = {"INFERD_DATA_DIR": str(tmp_path / "state")}
    with serve(printed["folder"], cwd=tmp_path, env=env, free_ports=False):
        called = run(sys.executable, "-m", "inferd", *printed["call"].split(), "--json", cwd=tmp_path)
    assert called.returncode == 0, called.stdout + called.stderr
    assert ANSWERS[dialect](json.loads(called.stdout)), called.stdout


def test_init_refuses_a_folder_with_files_and_an_unknown_dialect(tmp_path: Path) -> None:
    (tmp_path / "kept.txt").write_text("mine")
    taken = CliRunner().invoke(app, ["init", str(tmp_path)])
    assert taken.exit_code == 2 and "not an empty folder" in taken.stderr
    assert [path.name for path in tmp_path.iterdir()] == ["kept.txt"]
    unknown = CliRunner().invoke(app, ["init", str(tmp_path / "new"), "--dialect", "bento"])
    assert unknown.exit_code == 2 and "unknown dialect 'bento'" in unknown.stderr
    assert not (tmp_path / "new").exists()
