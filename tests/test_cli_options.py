"""`inferd serve`'s options are generated from the settings: every field is an option named after it
with its docstring's first sentence as help, a field added is an option at once, and an option not
given leaves the setting to the environment (precedence: inferd.yaml < INFERD_* < options)."""

from __future__ import annotations

import os
import subprocess
from typing import Any

import httpx
import pytest
from pydantic import Field
from typer.core import TyperCommand

from inferd.cli import options, serve
from inferd.config.settings import Settings
from tests.conftest import IRIS
from tests.servers import ROOT, inferd_command, with_this_tree
from tests.servers import serve as serving


def by_name(command: Any) -> dict[str, Any]:
    return {param.name: param for param in command.params}


def test_every_setting_but_the_excluded_is_an_option_with_its_first_sentence_as_help() -> None:
    params = by_name(serve.command())
    assert set(options.EXCLUDED) == {"target", "models"}
    for name, field in Settings.model_fields.items():
        if name in options.EXCLUDED:
            assert name not in params or name == "target"
            continue
        param = params[name]
        assert options.option_name(name) in param.opts, name
        assert param.help.startswith(options.first_sentence(field.description)), name
        assert param.default is None, name  # not given: the environment and inferd.yaml decide
    assert params["port"].help == "HTTP port; 0 picks a free one (the ready line shows it). [default: 8080]"
    assert params["hang_timeout"].help.startswith("With --isolate: seconds an HTTP request may wait")
    assert params["service_type"].help.startswith("Seldon component type. One of: MODEL, ROUTER,")
    assert params["warm"].secondary_opts == ["--nowarm"]
    assert params["grpc_enabled"].secondary_opts == ["--no-grpc"]


def test_a_field_added_to_the_settings_is_an_option() -> None:
    class More(Settings):
        warmup_requests: int = Field(3, ge=0)
        """Requests sent to each model before it reports ready. More text that the help leaves out."""

    params = by_name(options.command(serve.serve, TyperCommand, More))
    assert params["warmup_requests"].opts == ["--warmup-requests"]
    assert params["warmup_requests"].help == (
        "Requests sent to each model before it reports ready. [default: 3]"
    )
    assert params["warmup_requests"].rich_help_panel == "Server"


def inferd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = with_this_tree({**os.environ, **(env or {}), "COLUMNS": "120"})
    return subprocess.run(
        inferd_command(*args), capture_output=True, text=True, timeout=60, cwd=ROOT, env=environment
    )


def test_a_choice_outside_the_settings_literal_exits_2_listing_the_choices() -> None:
    result = inferd("serve", IRIS, "--log-level", "loud")
    assert result.returncode == 2
    assert "'loud' is not one of 'debug', 'info', 'warning', 'error'" in " ".join(result.stderr.split())


@pytest.mark.parametrize("option", [[], ["--max-body-size", "100"]])
def test_a_generated_option_sets_its_setting_and_one_not_given_leaves_the_environments(
    option: list[str],
) -> None:
    """--max-body-size was no option before; not given, INFERD_MAX_BODY_SIZE still applies (the option's
    default is not passed over it)."""
    env = {} if option else {"INFERD_MAX_BODY_SIZE": "100"}
    with serving(IRIS, "--no-grpc", *option, env=env) as server:
        big = httpx.post(f"{server.http_url}/v2/models/iris/infer", content=b"x" * 200)
    assert big.status_code == 413


@pytest.mark.parametrize("columns", [80, 120])
def test_serve_help_keeps_every_option_whole_with_readable_types(columns: int) -> None:
    environment = with_this_tree({**os.environ, "COLUMNS": str(columns), "TERM": "dumb"})
    environment.pop("TERMINAL_WIDTH", None)
    result = subprocess.run(
        inferd_command("serve", "--help"),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=environment,
    )
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "…" not in text
    option_lines = [line for line in text.splitlines() if line.startswith("│ --")]
    assert len(option_lines) >= len(options.fields())
    assert not [line for line in option_lines if "<int>" in line or "<str>" in line or "<bool>" in line]
    for name in options.fields():
        assert options.option_name(name[0]) in text
    flat = " ".join(text.replace("│", " ").split())
    assert "--workers INTEGER Number of server processes" in flat
    assert "One of: debug, info, warning, error. [default: info]" in flat
