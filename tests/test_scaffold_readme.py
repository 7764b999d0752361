"""The commands each ``inferd init`` project's README lists can be typed as printed in the environment
``make demo`` makes (inferd with its ``demo`` extra; issue 43 item 10): every ``python -m MODULE``
names a module that environment has or that an earlier line of the README installs, every ``pip
install -r FILE`` a file the project has, every ``inferd COMMAND`` a command inferd has. The READMEs
said ``python -m pytest`` while nothing installs pytest there ("No module named pytest").

What is run: ``inferd COMMAND --help`` for each command, and the README's ``python -m pytest`` as
printed in the project's folder (pytest is present in the test environment; the README's ``pip
install pytest`` is not run, so that the tests install nothing)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from tests.servers import ROOT, inferd_command, with_this_tree

DIALECTS = ["native", "seldon", "deepaas", "cortex", "abeja"]
#: A requirement's distribution name (what precedes its version, extras or marker).
NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def names(requirements: list[str]) -> set[str]:
    found = set()
    for requirement in requirements:
        match = NAME.match(requirement)
        if match:
            found.add(match[1].lower().replace("-", "_"))
    return found


def demo_environment() -> set[str]:
    """The distributions ``make demo`` installs by name: inferd, its dependencies and its demo extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    makefile = (ROOT / "Makefile").read_text()
    extras = re.findall(r"pip install --quiet -e '\.\[(\w+)\]'", makefile.split("$(STAMP):")[0])
    assert extras == ["demo"], extras  # what the demo's environment is made of
    return {"inferd"} | names(project["dependencies"]) | names(project["optional-dependencies"]["demo"])


def commands(readme: str) -> list[str]:
    """The first ``sh`` block's lines, without their comments, continuations joined."""
    block = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    lines = block.replace("\\\n", " ").splitlines()
    return [line.split(" #", 1)[0].strip() for line in lines if line.strip()]


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = with_this_tree(dict(os.environ))
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_readme_commands_work_in_the_demo_environment(dialect: str, tmp_path: Path) -> None:
    project = tmp_path / f"my-{dialect}"
    made = run(inferd_command("init", str(project), "--dialect", dialect), tmp_path)
    assert made.returncode == 0, made.stderr
    installed = demo_environment()
    listed = commands((project / "README.md").read_text())
    assert any(line.startswith("python -m pytest") for line in listed), listed
    for line in listed:
        words = shlex.split(line)
        if words[:3] == ["pip", "install", "-r"]:
            requirements = project / words[3]
            assert requirements.is_file(), line
            installed |= names(requirements.read_text().splitlines())
        elif words[:2] == ["pip", "install"]:
            installed |= names(words[2:])
        elif words[0] == "inferd":
            helped = run(inferd_command(words[1], "--help"), project)
            assert helped.returncode == 0, (line, helped.stderr)
        elif words[:2] == ["python", "-m"]:
            module = words[2]
            assert module in installed, f"{line!r}: nothing installs {module} (the README has: {listed})"
            if module == "pytest":  # as printed, in the project's folder
                tested = run([sys.executable, *words[1:], "-p", "no:cacheprovider"], project)
                assert tested.returncode == 0 and "passed" in tested.stdout, tested.stdout + tested.stderr
        else:
            assert words[0] == "curl", line  # what else a README may list: requests to the server
