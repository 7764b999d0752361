"""A real control process (``inferd platform serve``) for the platform's tests: free ports for its API,
gateway and gRPC gateway, a data folder of the test's, the environment a test adds (tokens, allowed
hosts, poll intervals), and SIGTERM at the end, then the services it left running ended.

Without tokens in that environment it runs as a user's does by default: with the token it generates
and prints (`Control.token`, sent by `Control.call`). Its runtime record goes to a folder of the
test's (``INFERD_RUNTIME_DIR``, which `Control.verb` gives the CLI too, as a user's shell shares
``XDG_RUNTIME_DIR``): the CLI finds the token there by itself, never told it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

from inferd.platform.services.sessions import signal_session
from inferd.platform.store import Store
from tests.servers import ROOT, inferd_command, with_this_tree


def native_project(folder: Path, name: str, model: str) -> Path:
    """A native model project in ``folder``: an ``inferd.yaml`` naming it ``name``, and ``model`` (its
    ``model.py``, dedented) as the code."""
    folder.mkdir(parents=True)
    (folder / "inferd.yaml").write_text(f"name: {name}\n")
    (folder / "model.py").write_text(textwrap.dedent(model))
    return folder


TOKEN_LINE = re.compile(r"inferd platform token: (?P<token>\S+) ")
READY = re.compile(
    r"inferd platform ready: api=(?P<api>\S+) gateway=(?P<gateway>http://\S+?)/e/ grpc=(?P<grpc>\S+)"
    r"(?: console=(?P<console>\S+))?"
)


@dataclass
class Control:
    process: subprocess.Popen[str]
    api: str  # http://HOST:PORT/platform/v1
    gateway: str
    grpc: str
    #: The token it generated and printed (None when the test gave it tokens or ran it open).
    token: str | None = None
    #: Its INFERD_RUNTIME_DIR.
    runtime: Path | None = None
    #: The console's URL, as its ready line says it.
    console: str | None = None

    @property
    def base(self) -> str:
        return self.api.removesuffix("/platform/v1")

    @property
    def headers(self) -> dict[str, str]:
        """The ``Authorization`` of its generated token, if it has one."""
        return {"authorization": f"Bearer {self.token}"} if self.token else {}

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {**self.headers, **(kwargs.pop("headers", None) or {})}
        return httpx.request(method, self.api + path, timeout=60, headers=headers, **kwargs)

    def cli_env(self) -> dict[str, str]:
        """The environment of an ``inferd`` CLI process of the same user: no token, its runtime folder."""
        return with_this_tree({"INFERD_RUNTIME_DIR": str(self.runtime)} if self.runtime else {})

    def verb(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = inferd_command("platform", *args, "--url", self.base)
        return subprocess.run(
            command, capture_output=True, text=True, timeout=120, env=self.cli_env(), cwd=ROOT
        )


@contextmanager
def control(
    data: Path,
    data_path: str = "gateway",
    env: dict[str, str] | None = None,
    keep_services: bool = False,
    output: Path | None = None,
) -> Iterator[Control]:
    """The control process until the block ends; then the services it leaves running are ended,
    unless ``keep_services`` (for a next control process to adopt them). Its output after its ready
    line goes to ``output`` when given."""
    command = inferd_command(
        "platform",
        "serve",
        "--port",
        "0",
        "--gateway-port",
        "0",
        "--grpc-gateway-port",
        "0",
        "--data-dir",
        str(data),
        "--data-path",
        data_path,
    )
    runtime = data.parent / f"{data.name}-runtime"
    environment = with_this_tree({**os.environ, "INFERD_RUNTIME_DIR": str(runtime), **(env or {})})
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment, cwd=ROOT
    )
    assert process.stdout is not None
    drain = threading.Thread(target=_copy, args=(process.stdout, output), daemon=True)
    token = None
    try:
        for line in process.stdout:
            printed = TOKEN_LINE.search(line)
            if printed:
                token = printed["token"]
            match = READY.search(line)
            if match:
                break
        else:
            raise AssertionError(f"the control process exited with {process.wait()}")
        drain.start()
        if token is not None:  # the token it printed is the one it keeps, for its user alone
            kept = data / "platform" / "control-token"
            assert kept.read_text().strip() == token and kept.stat().st_mode & 0o777 == 0o600
        runtime_dir = Path(environment["INFERD_RUNTIME_DIR"])
        yield Control(
            process, match["api"], match["gateway"], match["grpc"], token, runtime_dir, match["console"]
        )
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        if drain.is_alive():
            drain.join(10)
        process.stdout.close()
        if not keep_services:
            end_services(data)


def _copy(stream: IO[str], output: Path | None) -> None:
    """Read ``stream`` to its end, each line appended to ``output`` at once when there is one."""
    if output is None:
        stream.read()
        return
    with output.open("a") as copy:
        for line in stream:
            copy.write(line)
            copy.flush()


def end_services(data: Path) -> None:
    """End the servers a stopped control process leaves running (by design: the next one adopts
    them), so that no test leaves processes behind."""
    database = data / "platform" / "platform.sqlite"
    if not database.exists():
        return
    with Store(database) as store:
        sessions = [service.pid for service in store.services()]
        sessions += [replica.pid for replica in store.replicas()]
    for session in filter(None, sessions):
        signal_session(session, signal.SIGTERM)
