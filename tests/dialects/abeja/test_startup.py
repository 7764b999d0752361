"""Start-up: finding the handler (target or HANDLER), telling its style apart, and what stops a start."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from inferd.dialects.abeja.handler import detect_style
from tests.dialects.abeja.conftest import LEGACY
from tests.servers import inferd_command, serve


def handler_request(request, context): ...  # type: ignore[no-untyped-def]
def handler_req(req, ctx): ...  # type: ignore[no-untyped-def]
def handler_iter(input_iter, context): ...  # type: ignore[no-untyped-def]
def handler_iterator(iterator, context): ...  # type: ignore[no-untyped-def]
def handler_plain(data, context): ...  # type: ignore[no-untyped-def]


def handler_generator(data, context):  # type: ignore[no-untyped-def]
    yield data


@pytest.mark.parametrize(
    ("function", "style"),
    [
        (handler_request, "19.04"),
        (handler_req, "19.04"),
        (handler_iter, "18.10"),
        (handler_iterator, "18.10"),
        (handler_generator, "18.10"),
        (handler_plain, "19.04"),
    ],
)
def test_style_detection(function: Callable[..., Any], style: str) -> None:
    assert detect_style(function) == style


def test_handler_variable_alone_serves_an_abeja_handler() -> None:
    with serve("", "--no-grpc", cwd=LEGACY, env={"HANDLER": "main:handler"}) as server:
        with httpx.Client(base_url=server.http_url, timeout=30) as http:
            assert http.post("/", json={"a": 1}).json() == {"echo": {"a": 1}}
            assert server.models == ["main"]


def test_style_override(tmp_path: Path) -> None:
    """Forced to 19.04, a generator-looking handler gets the request object."""
    (tmp_path / "main.py").write_text(
        "def handler(data_iter, context):\n    return {'content': [data_iter.read().upper()]}\n"
    )
    with serve("main:handler", "--dialect", "abeja", "--abeja-style", "19.04", cwd=tmp_path) as server:
        response = httpx.post(server.http_url, content=b"abc", headers={"content-type": "text/plain"})
        assert response.content == b"ABC"


def start_fails(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = inferd_command("serve", *args, "--port", "0", "--no-grpc")
    environment = {key: value for key, value in os.environ.items() if key != "HANDLER"}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=60, cwd=cwd, env={**environment, **(env or {})}
    )


def test_no_target_and_no_handler_variable(tmp_path: Path) -> None:
    done = start_fails(tmp_path)
    assert done.returncode == 2
    assert "missing TARGET" in done.stderr and "HANDLER" in done.stderr


def test_handler_must_be_module_colon_function(tmp_path: Path) -> None:
    done = start_fails(tmp_path, "main", "--dialect", "abeja")
    assert done.returncode == 2
    assert "handler 'main' must be module:function" in done.stderr


def test_a_handler_that_fails_to_import(tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text("import not_installed_anywhere\n")
    done = start_fails(tmp_path, env={"HANDLER": "main:handler"})
    assert done.returncode == 1
    assert "not_installed_anywhere" in done.stderr


def test_failing_requirements_stop_the_start(tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text("def handler(request, context):\n    return {}\n")
    (tmp_path / "requirements.txt").write_text(f"{tmp_path / 'no-such-package-dir'}\n")
    done = start_fails(tmp_path, "main:handler", "--dialect", "abeja", "--install-requirements")
    assert done.returncode != 0
    assert "requirements.txt failed" in done.stderr
