"""The inferd command line: version, predict, and what a wrong target gets."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from inferd import __version__
from tests.conftest import IRIS, TEST_MODELS
from tests.servers import ROOT, inferd_command

REQUEST = ROOT / "examples" / "iris" / "request.json"


def inferd(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        inferd_command(*args), capture_output=True, text=True, input=stdin, timeout=120, cwd=ROOT
    )


def test_version() -> None:
    result = inferd("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"inferd {__version__}"


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_predict_prints_the_v2_response(source: str) -> None:
    if source == "file":
        result = inferd("predict", IRIS, "--input", str(REQUEST))
    else:
        result = inferd("predict", IRIS, "--input", "-", stdin=REQUEST.read_text())
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    label = next(output for output in body["outputs"] if output["name"] == "label")
    assert label["data"] == [0, 2]


def test_predict_picks_a_model_of_several() -> None:
    request = '{"inputs": [{"name": "x", "shape": [2], "datatype": "INT8", "data": [4, 5]}]}'
    result = inferd(
        "predict", str(TEST_MODELS / "native.py"), "--model", "echo", "--input", "-", stdin=request
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["outputs"][0]["data"] == [4, 5]


def test_predict_reports_bad_input() -> None:
    result = inferd("predict", IRIS, "--input", "-", stdin="{nope")
    assert result.returncode == 1
    assert "Invalid JSON" in result.stderr


@pytest.mark.parametrize(
    ("target", "fragment"),
    [
        ("no/such/model.py:Model", "no such file or directory"),
        ("json:loads", "expected path/to/model.py:Class"),
        ("no_such_module_anywhere", "expected path/to/model.py:Class"),
    ],
)
def test_unknown_targets_exit_2_saying_what_was_expected(target: str, fragment: str) -> None:
    result = inferd("serve", target, "--port", "0")
    assert result.returncode == 2
    assert fragment in result.stderr.replace("\n", " ")


def test_an_explicit_dialect_reports_what_it_expected() -> None:
    result = inferd("serve", "json:loads", "--dialect", "native")
    assert result.returncode == 2
    assert "not a subclass of inferd.Model" in result.stderr


def test_invalid_options_exit_2(tmp_path: Path) -> None:
    result = inferd("serve", IRIS, "--workers", "0")
    assert result.returncode == 2
    assert "workers" in result.stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_model_that_fails_to_load_stops_serve_with_code_1(workers: str) -> None:
    result = inferd("serve", str(TEST_MODELS / "broken_load.py"), "--port", "0", "--workers", workers)
    assert result.returncode == 1
    assert "weights.bin" in result.stderr
    assert "inferd ready" not in result.stdout


@pytest.mark.parametrize("option", ["--port", "--grpc-port"])
def test_a_port_in_use_exits_1_naming_it(option: str) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        other = "--grpc-port" if option == "--port" else "--port"
        result = inferd("serve", IRIS, option, port, other, "0")
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("name", ["../../x", "a/b", "", ".", "..", "-x", "with space"])
def test_a_name_no_url_path_can_carry_exits_2(name: str) -> None:
    """Such a name used to be served where no request reaches it, or (empty) silently ignored."""
    result = inferd("serve", IRIS, "--port", "0", "--grpc-port", "0", "--name", name)
    assert result.returncode == 2, result.stderr
    assert f"model name {name!r} cannot be used in a URL path" in result.stderr.replace("\n", " ")


def test_a_derived_name_follows_the_same_rule(tmp_path: Path) -> None:
    """A project folder's name becomes the model's name: one no path can carry stops start-up too."""
    folder = tmp_path / "iris (copy)"
    shutil.copytree(IRIS, folder)
    result = inferd("serve", str(folder), "--port", "0", "--grpc-port", "0")
    assert result.returncode == 2, result.stderr
    assert "model name 'iris (copy)' cannot be used in a URL path" in result.stderr.replace("\n", " ")


def test_an_allowed_origin_that_is_no_origin_exits_2() -> None:
    """A bare host name would never match a browser's Origin: refused rather than silently useless."""
    result = inferd("serve", IRIS, "--port", "0", "--allowed-origin", "example.com")
    assert result.returncode == 2
    assert "origin 'example.com' is not '*' or http(s)://host[:port]" in result.stderr.replace("\n", " ")


def test_help_loads_no_server_engine_or_numpy() -> None:
    """`inferd --help` used to import the server, the engines and numpy (about a second); each command
    now imports what it runs when it runs."""
    script = (
        "import sys\nfrom inferd.cli import main\nsys.argv = ['inferd', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('numpy', 'pydantic', 'inferd.server', 'inferd.engines', 'inferd.dialects', 'grpc')\n"
        "print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] in heavy or m.startswith(heavy)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert "Usage:" in result.stdout
    assert result.stdout.splitlines()[-1] == "LOADED []"
