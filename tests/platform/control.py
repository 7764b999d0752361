"""A real control process (``inferd platform serve``) for the platform's tests: free ports for its API,
gateway and gRPC gateway, a data folder of the test's, the environment a test adds (tokens, allowed
hosts, poll intervals), and SIGTERM at the end, then the services it left running ended."""

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


READY = re.compile(
    r"inferd platform ready: api=(?P<api>\S+) gateway=(?P<gateway>http://\S+?)/e/ grpc=(?P<grpc>\S+)"
)


@dataclass
class Control:
    process: subprocess.Popen[str]
    api: str  # http://HOST:PORT/platform/v1
    gateway: str
    grpc: str

    @property
    def base(self) -> str:
        return self.api.removesuffix("/platform/v1")

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(method, self.api + path, timeout=60, **kwargs)

    def verb(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = inferd_command("platform", *args, "--url", self.base)
        return subprocess.run(
            command, capture_output=True, text=True, timeout=120, env=with_this_tree({}), cwd=ROOT
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
    environment = with_this_tree({**os.environ, **(env or {})})
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment, cwd=ROOT
    )
    assert process.stdout is not None
    drain = threading.Thread(target=_copy, args=(process.stdout, output), daemon=True)
    try:
        for line in process.stdout:
            match = READY.search(line)
            if match:
                break
        else:
            raise AssertionError(f"the control process exited with {process.wait()}")
        drain.start()
        yield Control(process, match["api"], match["gateway"], match["grpc"])
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
