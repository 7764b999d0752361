"""A runner with short back-offs, the tiny native model folders it serves, and what it reported."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from inferd.platform.records import ServiceState
from inferd.platform.services import LocalRunner, RestartPolicy, ServiceSpec, StateChange
from tests.servers import with_this_tree

ECHO = """
import numpy as np

import inferd


class Echo(inferd.Model):
    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(inputs)
"""
BROKEN = """
import inferd

raise RuntimeError("broken model code: cannot find weights.bin")
"""
#: Quick back-offs: a failing start is tried twice.
POLICY = RestartPolicy(first_delay=0.1, max_delay=0.4, start_attempts=2, start_timeout=60)


class Changes(list[tuple[str, StateChange]]):
    """What ``on_change`` was told, in order."""

    def __call__(self, service_id: str, change: StateChange) -> None:
        self.append((service_id, change))

    def states(self, service_id: str) -> list[ServiceState]:
        states = [change.state for sid, change in self if sid == service_id]
        return [state for index, state in enumerate(states) if index == 0 or states[index - 1] != state]


def project(root: Path, name: str, code: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "model.py").write_text(code)
    return folder


def spec_of(tmp_path: Path, folder: Path, service_id: str = "svc-echo", **values: object) -> ServiceSpec:
    return ServiceSpec(
        service_id,
        folder,
        log_dir=tmp_path / "logs",
        dialect="native",
        environment=with_this_tree({}),
        **values,  # type: ignore[arg-type]
    )


@pytest.fixture
def changes() -> Changes:
    return Changes()


@pytest.fixture
async def runner(changes: Changes) -> AsyncIterator[LocalRunner]:
    runner = LocalRunner(changes, policy=POLICY, poll_interval=0.05)
    try:
        yield runner
    finally:
        await runner.aclose(grace=5)


@pytest.fixture
def echo(tmp_path: Path) -> Path:
    return project(tmp_path, "echo", ECHO)


#: Gone with code 3 at its first request: a service that crashes in a loop when used.
CRASHING = """
import os

import numpy as np

import inferd


class Crashing(inferd.Model):
    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        os._exit(3)
"""
