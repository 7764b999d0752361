"""What a new user meets first, run as they would run it: `inferd --help` and `inferd serve --help` in
an 80-column terminal, the errors of targets given the wrong way, and `inferd models` piped."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import IRIS
from tests.servers import ROOT, inferd_command, serve, with_this_tree

COMMANDS = [
    "serve",
    "init",
    "predict",
    "train",
    "run-local",
    "run-local-server",
    "run",
    "train-local",
    "models",
]
COMMANDS += ["call"]
COMMANDS += ["build", "export", "export k8s"]


def inferd(*args: str, cwd: Path = ROOT, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = with_this_tree({**os.environ, "COLUMNS": str(columns), "TERM": "dumb"})
    env.pop("TERMINAL_WIDTH", None)
    return subprocess.run(inferd_command(*args), capture_output=True, text=True, timeout=60, cwd=cwd, env=env)


def option_names(help_text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", help_text))


def test_serve_help_shows_defaults_and_whole_option_names() -> None:
    """The defaults used to be read as rich markup and dropped ("HTTP port, 0 for a free one ."), flags
    showed <bool>, and names were cut with an ellipsis ("--install-requirem…") at 80 columns."""
    result = inferd("serve", "--help")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    flat = " ".join(text.replace("│", " ").split())
    assert "HTTP port; 0 picks a free one (the ready line shows it). [default: 8080]" in flat
    assert "Interface the HTTP and gRPC servers bind to. [default: 127.0.0.1]" in flat
    assert "<bool>" not in text
    assert "…" not in text
    for name in ("--install-requirements", "--nopredict-endpoint", "--http-port", "--listen-port"):
        assert name in option_names(text)
    panels = ("Server", "Logging", "Workers and scaling", "Ray Serve", "Batching", "Limits", "Access")
    for panel in (*panels, "Seldon", "Inference graphs", "DEEPaaS", "ABEJA"):
        assert f"─ {panel} ─" in text


@pytest.mark.parametrize("command", COMMANDS)
def test_no_help_cuts_a_name_or_shows_bool(command: str) -> None:
    result = inferd(*command.split(), "--help")
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout
    assert "<bool>" not in result.stdout


def test_the_platforms_option_names_still_set_the_port_and_host() -> None:
    """Seldon's --http-port and DEEPaaS's --listen-ip/--listen-port are options of their own now (shown
    in their platform's panel): they still set what --port and --host set."""
    with serve(
        IRIS, "--http-port", "0", "--grpc-port", "0", "--listen-ip", "127.0.0.1", free_ports=False
    ) as s:
        assert s.http_url.startswith("http://127.0.0.1:")
    with serve(IRIS, "--listen-port", "0", "--no-grpc", free_ports=False) as s:
        assert not s.http_url.endswith(":8080")


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("first-minutes")
    for name, dialect in (("my-native", "native"), ("my-seldon", "seldon")):
        created = inferd("init", name, "--dialect", dialect, cwd=folder)
        assert created.returncode == 0, created.stderr
    return folder


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_a_native_project_served_as_seldon_says_what_to_type(projects: Path) -> None:
    """It used to say only `no such file: /.../my-native:/.../my-native`."""
    result = inferd("serve", "my-native", "--dialect", "seldon", "--port", "0", cwd=projects)
    assert result.returncode == 2
    assert "try: inferd serve my-native (its inferd.yaml names its convention)" in one_line(result.stderr)


@pytest.mark.parametrize("dialect", [[], ["--dialect", "seldon"]])
def test_a_seldon_file_says_to_serve_its_class_from_its_folder(projects: Path, dialect: list[str]) -> None:
    """It used to say it could not tell (or to name the class after the file's path), with no word of
    how Seldon components are served."""
    result = inferd("serve", "my-seldon/MyModel.py", *dialect, "--port", "0", cwd=projects)
    assert result.returncode == 2
    assert "try: cd my-seldon && inferd serve MyModel --dialect seldon" in one_line(result.stderr)


def test_a_misspelt_class_names_the_classes_the_file_has() -> None:
    """``model.py:Irs`` listed eleven target forms; the file's classes say what was meant."""
    result = inferd("serve", "examples/iris/model.py:Irs", "--port", "0", "--grpc-port", "0")
    assert result.returncode == 2
    assert f"no class 'Irs' in {ROOT}/examples/iris/model.py; it has: Iris" in one_line(result.stderr)
    assert "cannot tell what" not in result.stderr


def test_a_model_raising_on_import_shows_its_own_frames_only(tmp_path: Path) -> None:
    """It printed ~25 frames of inferd's target detection and importlib before the user's one line."""
    (tmp_path / "boom").mkdir()
    (tmp_path / "boom" / "helper.py").write_text("def explode():\n    raise RuntimeError('boom at import')\n")
    (tmp_path / "boom" / "model.py").write_text("import inferd\nfrom helper import explode\n\nexplode()\n")
    result = inferd("serve", "boom", "--port", "0", "--grpc-port", "0", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    model, helper = tmp_path / "boom" / "model.py", tmp_path / "boom" / "helper.py"
    assert f"error: {model}, line 4: RuntimeError: boom at import" in one_line(result.stderr)
    assert re.findall(r'File "([^"]+)", line (\d+)', result.stderr) == [(str(model), "4"), (str(helper), "2")]
    assert "inferd/" not in result.stderr.replace(str(tmp_path), "")  # none of inferd's own frames


def test_the_suggested_command_serves_the_component(projects: Path) -> None:
    with serve("MyModel", "--dialect", "seldon", cwd=projects / "my-seldon") as server:
        assert server.models == ["mymodel"]


def test_models_piped_keeps_long_names_whole() -> None:
    name = "a-rather-long-model-name-that-an-eighty-column-table-used-to-fold-in-two"
    with serve(IRIS, "--name", name, "--no-grpc") as server:
        result = inferd("models", "--url", server.http_url)
    assert result.returncode == 0, result.stderr
    assert name in result.stdout
    assert f"POST /v2/models/{name}/infer" in result.stdout


def test_init_prints_the_next_commands_unbroken(tmp_path: Path) -> None:
    """At 80 columns the suggested `inferd call` used to break before its input path."""
    result = inferd("init", "a-project-with-a-fairly-long-name", "--dialect", "seldon", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    name = "a-project-with-a-fairly-long-name"
    expected = f"inferd call {name} --url http://127.0.0.1:9000 --input {name}/sample.json"
    assert any(expected in line for line in result.stderr.splitlines())
