"""How ``--help`` reads: the defaults written in option help stay visible, flags show no ``<bool>``
type, a command's options are grouped into panels, and ``inferd --help`` lists a command without
building its options (``Lazy``).

typer renders help with rich, which reads ``[default: 8080]`` as a markup tag and drops it (leaving
"HTTP port, 0 for a free one ."), and labels every flag ``<bool>`` though a flag takes no value. Every
command and group of the ``inferd`` app uses these classes, which tidy the parameters just before the
help is printed; parsing is untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from typer.core import TyperCommand, TyperGroup

from inferd.cli.common import escape


def tidy(params: list[Any]) -> None:
    """Escape rich markup in each help text and give flags an empty type label (once per parameter)."""
    for param in params:
        if getattr(param, "_inferd_tidy", False):
            continue
        param._inferd_tidy = True
        if getattr(param, "help", None):
            param.help = escape(param.help)
        if getattr(param, "is_flag", False):
            param.metavar = ""


class Command(TyperCommand):
    def format_help(self, ctx: Any, formatter: Any) -> None:
        tidy(self.get_params(ctx))
        super().format_help(ctx, formatter)


class Lazy(Command):
    """A stand-in for a command whose options cost an import to build (``serve``'s come from the
    settings, which import pydantic): ``inferd --help`` lists it from its name and docstring, and the
    group builds the real command (``load``) only when it runs or shows its own help."""

    load: Callable[[], TyperCommand]


def lazy(load: Callable[[], TyperCommand]) -> type[Lazy]:
    """A ``Lazy`` command class building its real command with ``load``."""
    return type("Lazy", (Lazy,), {"load": staticmethod(load)})


class Group(TyperGroup):
    def format_help(self, ctx: Any, formatter: Any) -> None:
        tidy(self.get_params(ctx))
        super().format_help(ctx, formatter)

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        """The command to run: a ``Lazy`` stand-in is replaced by its real command here, where click
        resolves what to invoke (listing commands in help goes through ``get_command`` only)."""
        name, command, rest = super().resolve_command(ctx, args)
        if isinstance(command, Lazy):
            command = command.load()
        return name, command, rest
