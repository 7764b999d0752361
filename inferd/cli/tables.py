"""The CLI's tables (``inferd platform services``, ``inferd get``...), with ids whole at any width.

The ids in them are what the next command takes (``inferd platform route iris main svc-...=100``),
so they are never cut: at 80 columns rich's tables shrank every column alike and printed ``svc-…``
and ``ver-e33…``. Here an id column keeps its width and stays on one line; free text (a reason, a
description) wraps; when the row is still wider than the terminal, the columns of least use are
left out (the last line says which, and ``--json`` has them all), as ``kubectl get`` keeps its wide
columns for ``-o wide``. Into a pipe or a file the table is as wide as it needs.

rich is imported when a table is printed (`inferd.cli.common` says why)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

#: Columns a cell of which is one word the user copies: never cut, never wrapped.
ID = "id"
#: Columns of prose: wrapped onto more lines, at least `TEXT_WIDTH` wide.
TEXT = "text"
#: Everything else: short values on one line.
PLAIN = "plain"
TEXT_WIDTH = 12
#: Between two columns: a cell's right padding and the (blank) rule.
GAP = 2
#: Into a pipe or a file: wide enough never to cut an id.
PIPE_WIDTH = 200


@dataclass(frozen=True)
class Column:
    header: str
    kind: str = PLAIN
    #: Left out when the terminal is too narrow, highest first; 0: always shown.
    drop: int = 0


def console() -> Console:
    """stdout's console: the terminal's width (``COLUMNS`` first), or `PIPE_WIDTH` when it is none."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else PIPE_WIDTH)


def print_table(columns: Sequence[Column], rows: Sequence[Sequence[str]], out: Console | None = None) -> None:
    """``rows`` (one string per column) under ``columns``, as wide as ``out`` (stdout's console)."""
    from rich import box
    from rich.cells import cell_len
    from rich.table import Table

    out = out or console()
    widths = [max([cell_len(c.header), *(cell_len(row[i]) for row in rows)]) for i, c in enumerate(columns)]
    shown = list(range(len(columns)))
    left_out: list[str] = []

    def needed() -> int:
        room = [min(widths[i], TEXT_WIDTH) if columns[i].kind == TEXT else widths[i] for i in shown]
        return sum(room) + GAP * (len(shown) - 1)

    for index in sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: -columns[i].drop):
        if needed() <= out.width:
            break
        shown.remove(index)
        left_out.append(columns[index].header)

    table = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0), header_style="bold"
    )
    for i in shown:
        column = columns[i]
        if column.kind == ID:
            table.add_column(column.header, no_wrap=True, min_width=widths[i])
        elif column.kind == TEXT:
            table.add_column(column.header, overflow="fold", min_width=min(widths[i], TEXT_WIDTH))
        else:
            table.add_column(column.header, no_wrap=True)
    for row in rows:
        table.add_row(*(row[i] for i in shown))
    out.print(table)
    if left_out:
        out.print(
            f"(not shown at {out.width} columns: {', '.join(left_out)}; see --json)",
            style="dim",
            highlight=False,
        )
