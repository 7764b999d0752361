"""``inferd serve --repository`` against model folders and uploads meant to break it, on a real server:
a model whose code raises a ``BaseException`` (``SystemExit``, ``GeneratorExit``, one of its own...)
at import or at load, a file name longer than a file system takes, a model name as long as names
may be, and a file sent beside a folder of the same name. Each load is answered 400 with JSON saying
what was wrong, in a moment and without the server growing; the repository is left as it was, and
the other models keep loading and answering."""

from __future__ import annotations

import base64
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.dialects.repository.conftest import native, write, x_request
from tests.servers import RunningServer, serve

MiB = 1024 * 1024
#: What an attack may add to the server's peak memory, and how long its answer may take.
MAX_GROWTH = 50 * MiB
MAX_SECONDS = 10.0

RAISED = {
    "system-exit": "raise SystemExit(3)",
    "generator-exit": "raise GeneratorExit('from the model')",
    "own-base-exception": "class Stop(BaseException):\n    pass\nraise Stop('a model of its own')",
    "keyboard-interrupt": "raise KeyboardInterrupt('raised by the model, not by Ctrl-C')",
}
AT_LOAD = textwrap.dedent("""
    import asyncio
    import inferd

    class Quits(inferd.Model):
        def load(self):
            {raise_}

        def predict(self, inputs):
            return inputs
""")
LOAD_RAISES = {
    "system-exit": "raise SystemExit('no')",
    "generator-exit": "raise GeneratorExit()",
    "cancelled": "raise asyncio.CancelledError('the model cancelled itself')",
}


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("attacked-repository")
    write(root / "doubler", {"model.py": native(2.0)})
    return root


@pytest.fixture(scope="module")
def server(repository: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    temp = tmp_path_factory.mktemp("temp")
    with serve(f"--repository={repository}", "--no-grpc", env={"TMPDIR": str(temp)}) as running:
        yield running
    assert not list(temp.iterdir())


def load(server: RunningServer, name: str, files: dict[str, bytes] | None = None) -> httpx.Response:
    """``POST /v2/repository/models/<name>/load``, with files (and an empty config) as tritonclient
    sends them over REST when ``files`` is given."""
    body = None
    if files is not None:
        parameters = {"config": "{}"}
        parameters |= {f"file:{path}": base64.b64encode(content).decode() for path, content in files.items()}
        body = {"parameters": parameters}
    with server.http() as http:
        return http.post(f"/v2/repository/models/{name}/load", json=body)


def refused(server: RunningServer, name: str, files: dict[str, bytes] | None = None) -> str:
    """The error of a load that must be refused with 400 JSON, quickly and without memory."""
    before = server.peak_memory()
    started = time.monotonic()
    answer = load(server, name, files)
    took = time.monotonic() - started
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    assert took < MAX_SECONDS
    assert server.peak_memory() - before < MAX_GROWTH
    error: str = answer.json()["error"]
    return error


def still_serving(server: RunningServer) -> None:
    """The other model loads again and answers."""
    assert load(server, "doubler").status_code == 200
    with server.http() as http:
        answer = http.post("/v2/models/doubler/infer", json=x_request(1.5))
    assert answer.status_code == 200, answer.text
    assert answer.json()["outputs"][0]["data"] == [3.0]


def listing(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if "__pycache__" not in path.parts)


@pytest.mark.parametrize("raised", sorted(RAISED))
def test_a_model_raising_a_base_exception_at_import_is_refused(
    server: RunningServer, repository: Path, raised: str
) -> None:
    name = f"import-{raised}"
    write(repository / name, {"model.py": RAISED[raised]})
    for _ in range(2):  # and again: nothing stuck
        error = refused(server, name)
        assert f"model '{name}'" in error and "Traceback" not in error, error
    still_serving(server)


@pytest.mark.parametrize("raised", sorted(LOAD_RAISES))
def test_a_model_raising_a_base_exception_at_load_is_refused(
    server: RunningServer, repository: Path, raised: str
) -> None:
    name = f"load-{raised}"
    write(repository / name, {"model.py": AT_LOAD.replace("{raise_}", LOAD_RAISES[raised])})
    error = refused(server, name)
    assert f"model '{name}' failed to load" in error, error
    still_serving(server)


def test_a_file_name_longer_than_a_file_system_takes_is_refused(
    server: RunningServer, repository: Path
) -> None:
    before = listing(repository)
    long = "a" * 256 + ".py"
    error = refused(server, "long-file", {long: native(3.0).encode(), "model.py": native(3.0).encode()})
    assert "at most 255" in error and "long-file" in error, error
    deep = "/".join(["d" * 200] * 8) + "/model.py"
    assert "at most 1024" in refused(server, "deep-file", {deep: b"x"})
    assert listing(repository) == before
    still_serving(server)


def test_a_model_named_as_long_as_names_may_be_is_written_and_loaded(
    server: RunningServer, repository: Path
) -> None:
    name = "m" * 255
    answer = load(server, name, {"model.py": native(4.0).encode()})
    assert answer.status_code == 200, answer.text
    with server.http() as http:
        inferred = http.post(f"/v2/models/{name}/infer", json=x_request(1.0))
    assert inferred.json()["outputs"][0]["data"] == [4.0]
    assert not [path for path in repository.iterdir() if path.name.startswith("_")]


def test_a_file_beside_a_folder_of_the_same_name_is_refused(server: RunningServer, repository: Path) -> None:
    before = listing(repository)
    error = refused(server, "clash", {"model.py": native(3.0).encode(), "x": b"1", "x/y": b"2"})
    assert "'x' is sent as a file and as the folder of 'x/y'" in error, error
    error = refused(server, "settings-clash", {"model.py": native(3.0).encode(), "inferd.yaml/x": b"2"})
    assert "'inferd.yaml'" in error, error
    assert listing(repository) == before
    still_serving(server)
