"""One run, start to end: a version's unpacked bundle over input files into an output folder.

An ABEJA handler runs as ``python -m inferd run --handler H --output OUT --input F...`` (ABEJA's batch
job, the handler in one process). Any other version is served by a one-off ``inferd serve`` on a free
loopback port: each input is sent through the model's own protocol, as the server describes it (the
`TryForm` ``inferd call`` uses: a ``.json`` file is the data, any other file is uploaded as the form
says), each answer written as ``<input stem>.<json|bin|...>``, and the server stopped.

Either process leads a session of its own and writes to the run's log, which also gets one line per
input with its outcome. Cancelling the task that awaits `execute` ends that session.
"""

from __future__ import annotations

import asyncio
import contextlib
import mimetypes
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferd import client
from inferd.config.project import read_file
from inferd.core.errors import TargetError
from inferd.platform.records import Version
from inferd.platform.services.local import READY
from inferd.platform.services.logs import LogReader, ServiceLog, quote
from inferd.platform.services.sessions import child_ended, describe_exit, end_session

#: Seconds the one-off server may take to print its ready line (loading large models).
START_TIMEOUT = 300.0
#: Seconds a process has to end after SIGTERM (cancelled, or its work done) before SIGKILL.
STOP_GRACE = 10.0
DEFAULT_HANDLER = "main:handler"
_POLL = 0.05
_EXTENSIONS = {"application/json": ".json", "text/plain": ".txt", "text/csv": ".csv", "image/jpeg": ".jpg"}


class RunFailed(Exception):
    """Why the run failed, in words for its ``reason``."""


@dataclass
class Job:
    """What one run is given: the version and its unpacked bundle, the input files, the output
    folder, the environment of its process (the version's, then the run's parameters), its log."""

    version: Version
    folder: Path
    files: list[Path]
    output: Path
    environment: dict[str, str]
    log: ServiceLog
    #: Sent to the one-off server, which takes only this token (in its environment).
    token: str | None = None
    python: str = sys.executable
    #: Told the process id of each process started (to end it if the control process dies).
    started: Callable[[int], None] = field(default=lambda pid: None)
    #: The storage prefix or http(s) location ``output`` is uploaded to once the run is done (shown:
    #: without its query string), for the log's lines.
    destination: str | None = None

    def where(self, path: Path) -> str:
        """Where an answer written at ``path`` ends up."""
        if self.destination is None:
            return str(path)
        return self.destination + path.relative_to(self.output).as_posix()


@dataclass(frozen=True)
class Outcome:
    written: int
    failed: int
    first_error: str = ""


def abeja_handler(version: Version, folder: Path) -> str | None:
    """The handler (``module:function``) when the version is an ABEJA one: dialect ``abeja`` (given
    when it was pushed, or in its ``inferd.yaml``), or ``HANDLER`` in its environment. The target
    when it names one, else ``HANDLER``, else the project file's target, else ``main:handler``."""
    try:
        project = read_file(folder) or {}
    except TargetError:
        project = {}
    dialect = version.dialect if version.dialect != "auto" else str(project.get("dialect", "auto"))
    handler = version.environment.get("HANDLER")
    if dialect != "abeja" and not (dialect == "auto" and handler):
        return None
    for candidate in (version.target, handler, project.get("target")):
        if isinstance(candidate, str) and ":" in candidate:
            return candidate
    return DEFAULT_HANDLER


async def execute(job: Job) -> Outcome:
    """Run the job; an `Outcome` counting the inputs written and failed, or `RunFailed` when the
    version could not run at all."""
    job.output.mkdir(parents=True, exist_ok=True)
    handler = abeja_handler(job.version, job.folder)
    if handler is not None:
        return await _abeja(job, handler)
    return await _served(job)


# ---- ABEJA handlers: inferd run -------------------------------------------------------------------


async def _abeja(job: Job, handler: str) -> Outcome:
    command = [job.python, "-m", "inferd", "run", "--handler", handler, "--output", str(job.output)]
    for file in job.files:
        command += ["--input", str(file)]
    reader = job.log.reader()
    process = _Process(job, command)
    try:
        code = await process.wait()
    finally:
        await process.end()
    said = "\n".join(reader.read_lines())
    outcome = Outcome(0, 0)
    for file in job.files:
        marker = f"failed {file.stem}: "
        failure = next((line for line in said.splitlines() if marker in line), None)
        written = sorted(job.output.glob(f"{_glob_escape(file.stem)}.*"))
        if failure is not None or not written:
            error = failure.split(marker, 1)[1] if failure else "no answer written"
            outcome = _failed(outcome, job.log, file, error)
        else:
            job.log.note(f"input {file}: written {job.where(written[0])}")
            outcome = Outcome(outcome.written + 1, outcome.failed, outcome.first_error)
    if code != 0 and outcome.failed == 0:
        raise RunFailed(f"inferd run {describe_exit(code)}: {quote(said.splitlines())}")
    return outcome


def _glob_escape(text: str) -> str:
    return "".join(f"[{char}]" if char in "*?[" else char for char in text)


# ---- any other dialect: a one-off inferd serve ----------------------------------------------------


async def _served(job: Job) -> Outcome:
    version = job.version
    command = [job.python, "-m", "inferd", "serve", version.target, "--host", "127.0.0.1", "--port", "0"]
    command += ["--grpc-port", "0", "--workers", "1"]
    if version.dialect != "auto":
        command += ["--dialect", version.dialect]
    reader = job.log.reader()
    process = _Process(job, command)
    try:
        url = f"http://127.0.0.1:{await process.ready(reader)}"
        headers = {"authorization": f"Bearer {job.token}"} if job.token else {}
        form = await asyncio.to_thread(_form, url, headers)
        outcome = Outcome(0, 0)
        stems: set[str] = set()
        for file in job.files:
            stem = _unique(file.stem, stems)
            try:
                answer = await asyncio.to_thread(_call, url, form, headers, file)
            except client.ClientError as exc:
                outcome = _failed(outcome, job.log, file, str(exc))
                continue
            if answer.status >= 400:
                text = answer.body[:500].decode("utf-8", "replace")
                outcome = _failed(outcome, job.log, file, f"HTTP {answer.status}: {text}")
                continue
            path = job.output / f"{stem}{_extension(answer.content_type)}"
            await asyncio.to_thread(path.write_bytes, answer.body)
            job.log.note(f"input {file}: HTTP {answer.status}, written {job.where(path)}")
            outcome = Outcome(outcome.written + 1, outcome.failed, outcome.first_error)
        return outcome
    finally:
        await process.end()


def _form(url: str, headers: Mapping[str, str]) -> Mapping[str, Any]:
    """How the server's model is called (the first one it serves that is ready)."""
    asked = client.Request("GET", client.DESCRIPTION, {"accept": client.JSON_TYPE, **headers})
    answer = client.send(url, asked)
    if answer.status != 200 or not answer.is_json:
        raise RunFailed(f"the server does not describe its models: HTTP {answer.status}")
    models = answer.json().get("models", [])
    for model in models:
        if model.get("try"):
            form: Mapping[str, Any] = model["try"]
            return form
    states = ", ".join(f"{m.get('name')}: {m.get('state')} {m.get('reason') or ''}".strip() for m in models)
    raise RunFailed(f"the server has no model ready to call ({states or 'no models'})")


def _call(url: str, form: Mapping[str, Any], headers: Mapping[str, str], file: Path) -> client.Answer:
    request = client.build(form, client.given(None, file, {}))
    request.headers.update(headers)
    return client.send(url, request)


def _extension(content_type: str) -> str:
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind.endswith("+json"):
        return ".json"
    return _EXTENSIONS.get(kind) or mimetypes.guess_extension(kind) or ".bin"


def _unique(stem: str, taken: set[str]) -> str:
    """``stem``, or ``stem-2``, ``stem-3``... when inputs from different folders share a name."""
    chosen, number = stem, 1
    while chosen in taken:
        number += 1
        chosen = f"{stem}-{number}"
    taken.add(chosen)
    return chosen


def _failed(outcome: Outcome, log: ServiceLog, file: Path, error: str) -> Outcome:
    log.note(f"input {file}: failed: {error}")
    return Outcome(outcome.written, outcome.failed + 1, outcome.first_error or f"{file.name}: {error}")


# ---- the process ------------------------------------------------------------------------------------


class _Process:
    """A command in the bundle's folder, leading its own session, writing to the run's log."""

    def __init__(self, job: Job, command: list[str]) -> None:
        self.job = job
        job.log.note(f"starting in {job.folder}: {' '.join(command[1:])}")
        try:
            self.child = job.log.spawn(command, job.folder, {**job.environment, "PYTHONUNBUFFERED": "1"})
        except OSError as exc:
            raise RunFailed(f"cannot start {command[3]} in {job.folder}: {exc}") from None
        job.started(self.child.pid)

    def ended(self) -> bool:
        return child_ended(self.child.pid)

    async def wait(self) -> int:
        while not self.ended():
            await asyncio.sleep(0.2)
        return self.child.wait()

    async def ready(self, reader: LogReader) -> int:
        """The port, once the server prints its ready line; RunFailed if it exits or takes too long."""
        seen: list[str] = []
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            ended = self.ended()
            for line in reader.read_lines():
                seen.append(line)
                found = READY.search(line)
                if found and not ended:
                    return int(found["port"])
            if ended:
                code = self.child.wait()
                how = describe_exit(code)
                raise RunFailed(f"the model's server {how} before it was ready: {quote(seen)}")
            if time.monotonic() > deadline:
                raise RunFailed(f"the model's server was not ready within {START_TIMEOUT:g} s: {quote(seen)}")
            await asyncio.sleep(_POLL)

    async def end(self) -> None:
        """SIGTERM to its session, SIGKILL after `STOP_GRACE` s; reaped."""
        pid = self.child.pid
        await asyncio.shield(asyncio.to_thread(end_session, pid, STOP_GRACE, self.ended))
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.child.wait(timeout=5)
