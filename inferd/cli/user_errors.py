"""An exception the user's own code raised while ``inferd serve`` imported or loaded it, told the way
its author needs it: one line naming their file, line and error, then only their frames. The full
traceback ran ~25 frames through inferd's target detection and importlib before reaching the one line
that mattered. An exception with no frame outside inferd is inferd's own bug and keeps its traceback."""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import inferd
from inferd.cli.common import errors, escape, fail

#: inferd's own files: frames in them are how the user's code was reached, not what the user wrote.
_OWN = str(Path(inferd.__file__).parent) + "/"


def user_frames(exc: BaseException) -> traceback.StackSummary:
    """The frames of ``exc`` from the first one in neither inferd nor Python's import machinery on
    (the libraries the user's code called stay: they say what it asked for)."""
    frames = traceback.extract_tb(exc.__traceback__)
    for index, frame in enumerate(frames):
        if not frame.filename.startswith(_OWN) and not frame.filename.startswith("<frozen "):
            return traceback.StackSummary.from_list(frames[index:])
    return traceback.StackSummary.from_list([])


@contextmanager
def user_code_errors() -> Iterator[None]:
    """End the command with code 1 and the user's frames only, when their code raises inside."""
    try:
        yield
    except Exception as exc:
        frames = user_frames(exc)
        if not frames:
            raise  # inferd's own bug: its whole traceback is what a report needs
        where = frames[0]
        errors().print("Traceback (your code's frames):", highlight=False)
        errors().print(escape("".join(frames.format()).rstrip()), highlight=False, soft_wrap=True)
        error = "".join(traceback.format_exception_only(exc)).strip()
        fail(f"{where.filename}, line {where.lineno}: {error}", code=1)
