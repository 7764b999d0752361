"""``abeja model run-local`` and batch runs without Docker: the handler runs in this process behind
the same `AbejaModel.answer` the server uses, so statuses, bodies and errors are identical.

The environment is what ABEJA's CLI gave the container (``HANDLER``, ``SERVICE_TYPE=HTTP``,
``ABEJA_TRAINING_RESULT_DIR=.``, ...), plus the user's ``-e KEY:VALUE`` variables.
"""

from __future__ import annotations

import io
import json
import logging
import mimetypes
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import TextIO

from inferd.core.settings import DEFAULT_MAX_IMAGE_PIXELS
from inferd.dialects.abeja import media
from inferd.dialects.abeja.responses import Answer
from inferd.dialects.abeja.service import AbejaModel, Call

USER_VARIABLE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
#: What ``abeja model run-local`` sends (JSON and images), plus video for 18.10 handlers.
RUN_LOCAL_TYPES = frozenset({media.JSON_TYPE, "image/jpeg", "image/png", "image/gif", *media.VIDEO_TYPES})
OUTPUT_EXTENSIONS = {
    "application/json": ".json",
    "image/jpeg": ".jpg",
    "image/png": ".png",
    "text/csv": ".csv",
    "text/plain": ".txt",
}


class LocalRunError(Exception):
    """An input or option run-local cannot use; the message is printed after ``[error]``."""


def user_variables(pairs: Iterable[str]) -> dict[str, str]:
    """``-e KEY:VALUE`` options as a dict; the value may hold colons, the key must be a name."""
    variables = {}
    for pair in pairs:
        key, sep, value = pair.partition(":")
        if not sep or not USER_VARIABLE.match(key):
            raise LocalRunError(f"invalid environment variable '{pair}': expected KEY:VALUE")
        variables[key] = value
    return variables


def apply_environment(handler: str, variables: dict[str, str], organization: str | None = None) -> None:
    """The variables ABEJA's CLI set for run-local; ones already set (or given with -e) win."""
    os.environ["HANDLER"] = handler
    defaults = {
        "SERVICE_TYPE": "HTTP",
        "ABEJA_TRAINING_RESULT_DIR": ".",
        "ABEJA_STORAGE_DIR_PATH": str(Path.home() / ".abeja" / ".cache"),
        "PYTHONUNBUFFERED": "x",
    }
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    if organization:
        os.environ["ABEJA_ORGANIZATION_ID"] = organization
    os.environ.update(variables)


def load(handler: str, style: str = "auto", max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS) -> AbejaModel:
    model = AbejaModel(handler, style, max_image_pixels)
    model.load()
    return model


def run_local_call(path: Path) -> Call:
    """The request run-local sends for a file: its type from the extension, JSON re-serialized
    (whitespace normalized, non-ASCII escaped) as the original CLI did."""
    content_type = media.content_type_for(path)
    if content_type not in RUN_LOCAL_TYPES:
        raise LocalRunError(f"not supported file type: {path.name} (use .json, .jpg, .png, .gif or a video)")
    try:
        body = path.read_bytes()
    except OSError as exc:
        raise LocalRunError(f"cannot read {path}: {exc.strerror}") from None
    if content_type == media.JSON_TYPE:
        try:
            body = json.dumps(json.loads(body)).encode()
        except ValueError as exc:
            raise LocalRunError(f"{path.name} is not valid JSON: {exc}") from None
    return Call("POST", content_type, [("content-type", content_type)], body)


def batch_call(path: Path) -> Call:
    """The request of one batch input: the file itself as the body, read lazily (videos stream).
    Any type goes (a 19.04 handler may read CSV or text); an 18.10 one refuses what it cannot decode."""
    content_type = (
        media.content_type_for(path) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    )
    return Call("POST", content_type, [("content-type", content_type)], path)


def environment_call() -> Call | None:
    """The platform's batch input: ``INPUT`` as an application/json body; DataLake references need
    the platform, so they get a clear error."""
    value = os.environ.get("INPUT")
    if not value:
        return None
    if "$datalake:1" in value:
        raise LocalRunError("INPUT names a DataLake file; download it and pass it with --input")
    return Call("POST", media.JSON_TYPE, [("content-type", media.JSON_TYPE)], value.encode())


def failure(answer: Answer) -> str | None:
    """run-local's error line for a non-2xx answer, in urllib's words; None for success."""
    if 200 <= answer.status < 300:
        return None
    try:
        phrase = HTTPStatus(answer.status).phrase
    except ValueError:  # a status the handler made up
        phrase = ""
    return f"failed to send request : HTTP Error {answer.status}: {phrase}"


def printable(answer: Answer) -> bytes:
    """The body as run-local prints it: JSON indented by 4, anything else raw (``> out.jpg`` works)."""
    try:
        document = json.loads(answer.body)
    except ValueError:
        return answer.body
    return json.dumps(document, indent=4).encode() + b"\n"


def batch_inputs(paths: Iterable[Path]) -> list[Path]:
    """Input files in order; a folder stands for the files in it, sorted."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(child for child in path.rglob("*") if child.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            raise LocalRunError(f"no such input: {path}")
    return files


@dataclass(frozen=True)
class BatchResult:
    output: Path | None
    error: str | None


def run_one(model: AbejaModel, stem: str, call: Call, output_dir: Path) -> BatchResult:
    """One batch input: call the handler, write ``<stem><ext>`` for a 2xx answer."""
    answer = model.answer(call)
    if not 200 <= answer.status < 300:
        return BatchResult(None, f"status {answer.status}: {answer.body.decode('utf-8', 'replace')}")
    media_type = media.media_type(answer.content_type)
    output = output_dir / f"{stem}{OUTPUT_EXTENSIONS.get(media_type, '.bin')}"
    output.write_bytes(answer.body)
    return BatchResult(output, None)


class CapturedLogs(logging.Handler):
    """The handler's log as run-local shows it: each line's message (and traceback), echoed to
    stderr as it comes unless quiet, and kept to show with an error."""

    def __init__(self, echo: bool) -> None:
        super().__init__()
        self.echo = echo
        self.lines: list[str] = []
        self.printed = io.StringIO()
        self.setFormatter(logging.Formatter("%(message)s"))

    def output(self) -> TextIO:
        """Where the handler's prints go: stderr, or kept with the log when quiet."""
        return sys.stderr if self.echo else self.printed

    def text(self) -> str:
        return self.printed.getvalue() + "\n".join(self.lines)

    def emit(self, record: logging.LogRecord) -> None:
        line = self.format(record)
        self.lines.append(line)
        if self.echo:
            print(line, file=sys.stderr, flush=True)

    def install(self) -> CapturedLogs:
        root = logging.getLogger()
        root.handlers[:] = [self]
        root.setLevel(logging.INFO)
        return self
