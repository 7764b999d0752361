"""The published ABEJA CLI in a venv of its own (its pins, click<7.1 among them, cannot live beside
inferd's), and a control process with tokens that ABEJA's clients reach."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.platform.control import control as platform_control
from tests.servers import ROOT

ABEJACLI = "abejacli==2.2.8"
VENV = ROOT / ".cache" / "abejacli-venv"
TOKEN = "abeja-test-token-0123456789"
#: What pip says when it cannot reach a package index.
UNREACHABLE = re.compile(
    r"Could not fetch URL|Failed to establish a new connection|Temporary failure in name resolution|"
    r"Network is unreachable|Connection refused|No matching distribution found",
    re.IGNORECASE,
)


def venv_with(folder: Path, packages: Sequence[str], ready: Path, works: Callable[[Path], bool]) -> Path:
    """``ready`` (a file of the venv ``folder``: its command or its Python) once ``packages`` are
    installed there from the package index, as users install them: a venv of their own (their pins
    are not inferd's), made once and kept under .cache/ (which git ignores), test workers waiting
    on one lock. Skipped only when no package index can be reached."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ready.exists() and works(ready):
            return ready
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], check=True, timeout=300)
        pip = [str(folder / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check"]
        installed = subprocess.run([*pip, *packages], capture_output=True, text=True, timeout=900)
        if installed.returncode != 0:
            said = installed.stdout + installed.stderr
            if UNREACHABLE.search(said):
                pytest.skip(f"pip cannot reach a package index to install {packages}: {said[-500:]}")
            raise AssertionError(f"pip install {packages} failed:\n{said}")
    assert works(ready)
    return ready


@pytest.fixture(scope="session")
def abeja_cli() -> Path:
    """The ``abeja`` command of abejacli 2.2.8 installed from the package index, as users install it
    (once; the venv is kept under .cache/, which git ignores)."""
    return venv_with(VENV, (ABEJACLI,), VENV / "bin" / "abeja", _works)


ABEJA_SDK = "abeja-sdk==2.3.6"
#: abeja-sdk 2.3.6 takes any protobuf, and protobuf 6 no longer reads the modules it generated.
SDK_PINS = (ABEJA_SDK, "protobuf<6")
SDK_VENV = ROOT / ".cache" / "abeja-sdk-venv"


@pytest.fixture(scope="session")
def abeja_sdk() -> Path:
    """The Python of a venv holding the published SDK (``abeja.datasets``, ``abeja.datalake``...),
    installed from the package index as users install it (once; kept under .cache/, which git
    ignores): its pins are not inferd's, so its scripts, and training jobs that call the SDK, run
    there, against a control process."""
    return venv_with(SDK_VENV, SDK_PINS, SDK_VENV / "bin" / "python", _sdk_works)


def _sdk_works(python: Path) -> bool:
    asked = "import abeja.datasets, abeja.train, abeja.version; print(abeja.version.VERSION)"
    found = subprocess.run([str(python), "-I", "-c", asked], capture_output=True, text=True, timeout=120)
    return found.returncode == 0 and found.stdout.strip() == "2.3.6"


def _works(command: Path) -> bool:
    found = subprocess.run([str(command), "--version"], capture_output=True, text=True, timeout=120)
    return found.returncode == 0 and "2.2.8" in found.stdout


@dataclass
class Control:
    process: subprocess.Popen[str]
    api: str  # http://127.0.0.1:PORT
    data: Path  # its --data-dir

    @property
    def port(self) -> int:
        return int(self.api.rsplit(":", 1)[1])

    def call(self, method: str, path: str, token: str | None = TOKEN, **kwargs: object) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}) or {})  # type: ignore[call-overload]
        if token is not None:
            headers.setdefault("authorization", f"Bearer {token}")
        return httpx.request(method, self.api + path, headers=headers, timeout=60, **kwargs)  # type: ignore[arg-type]


@contextmanager
def control(data: Path, **variables: str) -> Iterator[Control]:
    """``inferd platform serve`` with a token, answering ``*.localhost`` (the host ABEJA's clients
    post model requests to is ``<organization>.<API host>``); ``variables`` are added to its
    environment (``INFERD_TRIGGER_POLL_SECONDS="0.2"``)."""
    env = {"INFERD_AUTH_TOKENS": TOKEN, "INFERD_ALLOWED_HOSTS": ".localhost", **variables}
    with platform_control(data, env=env) as running:
        yield Control(running.process, running.base, data)


#: The body limit of uploads (archives, DataLake files) in `shared_control`.
SHARED_UPLOAD_LIMIT = 64 * 1024


@pytest.fixture(scope="package")
def shared_control(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Control]:
    """One control process for the HTTP tests of this package that need no settings of their own
    (a control process takes seconds to start); uploads are limited to `SHARED_UPLOAD_LIMIT`."""
    data = tmp_path_factory.mktemp("abeja-shared") / "data"
    with control(data, INFERD_MAX_BUNDLE_SIZE=str(SHARED_UPLOAD_LIMIT)) as running:
        yield running


def abeja_env(running: Control, home: Path) -> dict[str, str]:
    """What a user of abejacli sets: the API URL, a user id and personal access token (sent as HTTP
    Basic), an organization id. ``HTTP_PROXY`` stands in for DNS: ``<organization>.localhost``, where
    check-endpoint-json posts, resolves nowhere on this machine, so every request goes to the control
    process as to a proxy (the absolute URL in its request line)."""
    return {
        "PATH": f"{VENV / 'bin'}:/usr/bin:/bin",
        "HOME": str(home),
        "ABEJA_API_URL": f"http://localhost:{running.port}",
        "ABEJA_PLATFORM_USER_ID": "1234567890123",
        "ABEJA_PLATFORM_PERSONAL_ACCESS_TOKEN": TOKEN,
        "ABEJA_ORGANIZATION_ID": "2345678901234",
        "HTTP_PROXY": running.api,
        "http_proxy": running.api,
        "NO_PROXY": "",
        "no_proxy": "",
        "LANG": "C.UTF-8",
        **({"SSL_CERT_FILE": os.environ["SSL_CERT_FILE"]} if "SSL_CERT_FILE" in os.environ else {}),
    }


TRAIN_VENV = ROOT / ".cache" / "abeja-train-venv"


def _train_pins() -> tuple[str, ...]:
    """What ABEJA's training image held for its sklearn template (its requirements pin 2019 releases
    that no longer install on this Python): the SDK, pandas and scikit-learn, the latter at the
    version inferd's own Python has, since the service that loads the job's pickles runs there."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        sklearn = f"scikit-learn=={version('scikit-learn')}"
    except PackageNotFoundError:
        sklearn = "scikit-learn"
    return (ABEJA_SDK, "protobuf<6", sklearn, "pandas")


@pytest.fixture(scope="session")
def abeja_train_python() -> Path:
    """The Python of a venv holding ABEJA's SDK 2.3.6 with scikit-learn and pandas, installed from the
    package index once (kept under .cache/, which git ignores): what the jobs of ABEJA's tabular
    templates run under, mapped to their image with INFERD_ABEJA_TRAINING_PYTHONS."""
    return venv_with(TRAIN_VENV, _train_pins(), TRAIN_VENV / "bin" / "python", _train_works)


def _train_works(python: Path) -> bool:
    asked = "import abeja.train, abeja.datalake, abeja.version, sklearn, pandas; print(abeja.version.VERSION)"
    found = subprocess.run([str(python), "-I", "-c", asked], capture_output=True, text=True, timeout=120)
    return found.returncode == 0 and "2.3.6" in found.stdout
