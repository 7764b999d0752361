"""``abeja`` commands of the installed abejacli run one after another in one process, for the tests'
many commands: the same click commands, HTTP client and output as the ``abeja`` executable, without
starting Python and importing abejacli again for each (half a second a command). Runs with the
Python of abejacli's venv (tests/platform/abeja/conftest.py), in the environment a user of abejacli
sets.

abejacli sleeps 15 s before it creates or changes an endpoint (``_create_endpoint`` and
``_update_endpoint`` in ``abejacli/run.py``: ABEJA's cloud wanted time to settle, and those are the
module's only sleeps); a control process needs no such wait, so those sleeps return at once here.
What is sent and what is printed stay the same.

Reads one JSON object a line from stdin, ``{"args": [...], "cwd": "..."}``, runs ``abeja ARGS`` in
``cwd`` and answers on stdout with one JSON line, ``{"returncode": N, "stdout": "...", "stderr": "..."}``.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sys
import time
import traceback
from typing import Any

import abejacli.run  # type: ignore[import-not-found]  # abejacli's venv only


class NoSleep:
    """The ``time`` module as ``abejacli.run`` sees it here: all of it but ``sleep``."""

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    @staticmethod
    def sleep(seconds: float) -> None:
        pass


abejacli.run.time = NoSleep()


def captured() -> io.TextIOWrapper:
    """A text stream like a pipe's (click wraps what has no binary buffer)."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)


def text_of(stream: io.TextIOWrapper) -> str:
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode("utf-8")


def run(args: list[str], cwd: str) -> dict[str, Any]:
    """``abeja ARGS`` as its executable would run it: click's standalone mode, exit code from SystemExit,
    an unexpected exception a traceback on stderr and exit code 1."""
    os.chdir(cwd)
    out, err = captured(), captured()
    # abejacli's logger writes to the stderr it found when it was set up: this command's instead
    handlers = [h for h in logging.getLogger("abejacli").handlers if type(h) is logging.StreamHandler]
    previous = [handler.setStream(err) for handler in handlers]
    code: int = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            abejacli.run.main.main(args=args, prog_name="abeja", standalone_mode=True)
    except SystemExit as exited:
        if isinstance(exited.code, str):
            err.write(exited.code + "\n")
        code = 1 if isinstance(exited.code, str) else int(exited.code or 0)
    except Exception:
        err.write(traceback.format_exc())
        code = 1
    finally:
        for handler, stream in zip(handlers, previous, strict=True):
            handler.setStream(stream)
    return {"returncode": code, "stdout": text_of(out), "stderr": text_of(err)}


def serve() -> None:
    answers = sys.stdout
    for line in sys.stdin:
        asked = json.loads(line)
        answers.write(json.dumps(run(asked["args"], asked["cwd"])) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve()
