"""How ``--help`` reads: the defaults written in option help stay visible, flags show no ``<bool>``
type, and a command's options are grouped into panels.

typer renders help with rich, which reads ``[default: 8080]`` as a markup tag and drops it (leaving
"HTTP port, 0 for a free one ."), and labels every flag ``<bool>`` though a flag takes no value. Every
command and group of the ``inferd`` app uses these classes, which tidy the parameters just before the
help is printed; parsing is untouched.
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from typer.core import TyperCommand, TyperGroup

#: The panels of `inferd serve --help`, in this order after typer's own Arguments and Options.
SERVER = "Server"
WORKERS = "Workers and scaling"
BATCHING = "Batching"
ACCESS = "Access"
SELDON = "Seldon"
DEEPAAS = "DEEPaaS"
ABEJA = "ABEJA"


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


class Group(TyperGroup):
    def format_help(self, ctx: Any, formatter: Any) -> None:
        tidy(self.get_params(ctx))
        super().format_help(ctx, formatter)
