"""``inferd serve``'s command line read without typer, for the process that then serves.

typer, with its own copy of click, and the command built from the settings (each option's help made
from the fields' docstrings) are about 2 MiB of a serving process's memory, kept for as long as it
serves (issue 26). `parse` reads the command lines a server is started with, from the same tables
the typer command is built from (`inferd.cli.options`), into the values typer would pass to
`inferd.cli.serve.serve`. Anything else (``--help``, a mistake, a value it does not read exactly as
click would) gives None, and the typer command runs instead: help and error messages come from typer
alone. tests/test_cli_argv.py checks both give the same values, and the same options.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferd.cli import options
from inferd.config.settings import Settings

#: Numbers as click reads them, in the forms read here (others go to click: ``+1``, ``1_000``, ``1e3``).
INTEGER = re.compile(r"-?[0-9]+")
FLOAT = re.compile(r"-?[0-9]+(\.[0-9]+)?")


@dataclass(frozen=True)
class Option:
    """One option name: the parameter it sets; the value of a flag (None: the option takes a value,
    converted by ``convert``, which gives None for one it does not read); repeatable or not."""

    parameter: str
    flag: bool | None = None
    convert: Callable[[str], Any] | None = None
    repeatable: bool = False


def table() -> dict[str, Option]:
    """Every option name of ``inferd serve`` (both names of a flag pair) → what it sets."""
    found: dict[str, Option] = {}
    for name, _ in options.fields():
        field = Settings.model_fields[name]
        first, _, second = options.spelled(name, field).partition("/")
        choices = options.option_choices(field.annotation)
        kind = None if choices else options.option_kind(name, field)
        if kind is bool:
            found[first] = Option(name, flag=True)
            if second:
                found[second] = Option(name, flag=False)
            continue
        found[first] = Option(name, convert=_converter(kind, choices), repeatable=kind == list[str])
    for name, alias in options.ALIASES.items():
        kind = options.option_kind(alias.field, Settings.model_fields[alias.field])
        found["--" + name.replace("_", "-")] = Option(name, convert=_converter(kind, None))
    return found


def parse(args: list[str]) -> dict[str, Any] | None:
    """The values ``serve``'s callback gets for ``args`` (every parameter, None when not given), or
    None when typer should read them."""
    known = table()
    values: dict[str, Any] = {"target": None} | {option.parameter: None for option in known.values()}
    rest = list(args)
    while rest:
        token = rest.pop(0)
        if not token.startswith("-"):
            if values["target"] is not None:
                return None
            values["target"] = token
            continue
        name, equals, value = token.partition("=")
        option = known.get(name)
        if option is None:
            return None
        if option.flag is not None:
            if equals:
                return None
            values[option.parameter] = option.flag
            continue
        if not equals:
            if not rest or rest[0].startswith("-"):
                return None
            value = rest.pop(0)
        assert option.convert is not None
        converted = option.convert(value)
        if converted is None:
            return None
        if option.repeatable:
            values[option.parameter] = [*(values[option.parameter] or []), converted]
        else:
            values[option.parameter] = converted
    return values


def run(values: dict[str, Any]) -> None:
    """``serve(**values)`` ended as typer's command would end it: `inferd.cli.common.fail` raises
    typer's Exit (importing typer as it fails), which becomes the exit code; Ctrl+C before the server
    handles it prints "Aborted!" and exits 1, as click does."""
    from inferd.cli.serve import serve

    try:
        serve(**values)
    except (KeyboardInterrupt, EOFError):
        print(file=sys.stderr)
        print("Aborted!", file=sys.stderr)
        sys.exit(1)
    except Exception as exc:
        typer = sys.modules.get("typer")
        if typer is not None and isinstance(exc, typer.Exit):
            sys.exit(exc.exit_code)
        raise


def _converter(kind: Any, choices: list[str] | None) -> Callable[[str], Any]:
    if choices:
        return lambda value: value if value in choices else None
    if kind is int:
        return lambda value: int(value) if INTEGER.fullmatch(value) else None
    if kind is float:
        return lambda value: float(value) if FLOAT.fullmatch(value) else None
    if kind is Path:
        return Path
    return str
