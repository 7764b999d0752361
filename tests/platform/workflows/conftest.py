"""One control process per test module (``inferd platform serve`` in a subprocess), the top-level
verbs run as ``inferd ...`` against it, and a load of requests through its gateway."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.platform.test_control import Control, control
from tests.servers import ROOT, inferd_command


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Control]:
    with control(tmp_path_factory.mktemp("platform")) as running:
        yield running


def verb(running: Control, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``inferd ARGS --url API`` (a top-level platform verb) as a subprocess."""
    command = inferd_command(*args, "--url", running.api.removesuffix("/platform/v1"))
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=running.cli_env(), cwd=ROOT
    )


class Load:
    """``threads`` clients calling ``send`` in a loop until stopped, keeping every answer's value
    (``read``) and every failure."""

    def __init__(
        self, send: Callable[[httpx.Client], httpx.Response], read: Callable[[Any], Any], threads: int = 4
    ) -> None:
        self.send, self.read = send, read
        self.answers: list[Any] = []
        self.failures: list[str] = []
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(threads)]

    def run(self) -> None:
        with httpx.Client(timeout=60) as http:
            while not self.stopping.is_set():
                try:
                    answer = self.send(http)
                except httpx.HTTPError as exc:
                    self.failures.append(repr(exc))
                    continue
                if answer.status_code == 200:
                    self.answers.append(self.read(answer.json()))
                else:
                    self.failures.append(f"{answer.status_code} {answer.text}")

    def wait_for(self, count: int, timeout: float = 60) -> None:
        """Until ``count`` answers have come."""
        deadline = time.monotonic() + timeout
        while len(self.answers) < count and not self.failures:
            assert time.monotonic() < deadline, f"{len(self.answers)} answers of {count}"
            time.sleep(0.05)

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(60)


def write(folder: Path, files: dict[str, str]) -> Path:
    import textwrap

    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    return folder
