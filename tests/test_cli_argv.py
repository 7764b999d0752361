"""A serving process reads ``inferd serve``'s command line without typer (`inferd.cli.argv`, issue
26): for every command line it reads, the values are those typer's command passes to ``serve``, with
the same types; anything else (help, mistakes, forms it does not read) is left to typer."""

from __future__ import annotations

from typing import Any

import pytest

from inferd.cli import argv, options, serve
from inferd.cli.help import Command

READ = [
    [],
    ["examples/iris"],
    ["examples/iris", "--port", "0", "--grpc-port", "0", "--no-grpc"],
    ["--port=9", "examples/iris", "--workers", "2", "--isolate"],
    ["m.py:Model", "--log-level", "debug", "--log-format", "abeja", "--access-log"],
    ["x", "--auth-token", "a", "--auth-token=b", "--allowed-origin", "http://127.0.0.1"],
    ["x", "--model-settings", "settings.json", "--data-dir", "/tmp/data"],
    ["x", "--grpc", "--isolate", "--no-isolate", "--max-batch-time-ms", "1.5", "--max-batch-size", "8"],
    ["x", "--max-batch-time-ms", "2", "--request-timeout", "30"],
    ["Model", "--dialect", "seldon", "--http-port", "5", "--service-type", "ROUTER"],
    ["--dialect", "deepaas", "--listen-ip", "127.0.0.1", "--listen-port", "7", "--nowarm"],
    ["x", "--predict-in-thread", "auto", "--port", "1", "--port", "2"],
    ["x", "--predict-in-thread", "true", "--no-access-log", "--name", "iris"],
]
#: Left to typer: its help, its errors, and values click reads in ways `argv` does not.
LEFT = [
    ["--help"],
    ["x", "--help"],
    ["x", "y"],
    ["x", "--no-such-option"],
    ["x", "--port"],
    ["x", "--port", "eighty"],
    ["x", "--port", "+80"],
    ["x", "--port", "-1"],
    ["x", "--log-level", "loud"],
    ["x", "--no-grpc=1"],
    ["x", "--", "y"],
    ["-"],
]


def typer_values(args: list[str]) -> dict[str, Any]:
    """What typer's ``serve`` command passes to its callback for ``args``."""
    got: dict[str, Any] = {}

    def capture(**values: Any) -> None:
        got.update(values)

    options.command(capture, Command).main(list(args), prog_name="inferd serve", standalone_mode=False)
    return got


@pytest.mark.parametrize("args", READ, ids=" ".join)
def test_a_command_line_it_reads_gives_typers_values_with_their_types(args: list[str]) -> None:
    ours = argv.parse(args)
    assert ours is not None
    theirs = typer_values(args)
    assert ours == theirs
    assert {name: type(value) for name, value in ours.items()} == {
        name: type(value) for name, value in theirs.items()
    }


@pytest.mark.parametrize("args", LEFT, ids=" ".join)
def test_help_mistakes_and_other_forms_are_left_to_typer(args: list[str]) -> None:
    assert argv.parse(args) is None


def test_it_knows_every_option_of_typers_command_and_no_other() -> None:
    params = serve.command().params
    names = {name for param in params for name in (*param.opts, *param.secondary_opts) if name[0] == "-"}
    assert set(argv.table()) == names
    for param in params:
        for name in (*param.opts, *param.secondary_opts):
            if name in names:
                option = argv.table()[name]
                assert option.parameter == param.name
                assert (option.flag is not None) == param.is_flag, name
                assert option.repeatable == param.multiple, name
