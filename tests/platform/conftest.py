"""The platform tests' shared fixtures: the storage tests' moto S3 server (runs in object storage,
the artifact store's copies), and the clean-up of services a test left running.

Services outlive their control process by design (a restarted control adopts them), so a test that
ends without stopping its services would leave their ``inferd serve`` processes behind; each test's
and then the session's temporary folders are swept for them. Under pytest-xdist the session's folder
is the worker's own (``.../popen-gwN``), so a sweep never reaches another worker's processes."""

import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.storage.conftest import bucket, s3_endpoint  # noqa: F401 (fixtures)


def _processes_under(root: Path) -> list[int]:
    """The processes (not this one) whose working folder is inside ``root``: a service runs in its
    own folder under the control's data folder."""
    found, root = [], root.resolve()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            folder = os.readlink(entry / "cwd")
        except OSError:
            continue
        # inside, not merely sharing a prefix: test_x1 is no part of test_x10, popen-gw1 of popen-gw10
        if Path(folder.removesuffix(" (deleted)")).is_relative_to(root):
            found.append(int(entry.name))
    return found


def stop_processes_under(root: Path) -> None:
    """Terminate what runs inside ``root``, killing what is still there after 5 s."""
    pids = _processes_under(root)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 5
    while pids and time.monotonic() < deadline:
        time.sleep(0.05)
        pids = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(autouse=True)
def no_services_left(tmp_path: Path) -> Iterator[None]:
    yield
    stop_processes_under(tmp_path)


@pytest.fixture(autouse=True, scope="session")
def no_services_left_at_all(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    yield
    stop_processes_under(tmp_path_factory.getbasetemp())


@pytest.fixture
def short_path() -> Iterator[Path]:
    """A folder of the test's own on a short path (``/tmp/inferd-XXXXXXXX``), for what HAProxy runs in:
    its socket paths must fit in 97 bytes, and a pytest-xdist worker's ``tmp_path``
    (``/tmp/pytest-of-USER/pytest-N/popen-gwN/TEST_NAME0/``) leaves a data folder no room for them.
    Swept and removed like ``tmp_path``."""
    folder = Path(tempfile.mkdtemp(prefix="inferd-"))
    try:
        yield folder
    finally:
        stop_processes_under(folder)
        shutil.rmtree(folder, ignore_errors=True)
