"""A target naming code outside what it came with, on real servers: a platform version (the control
process) whose target is ``../other/model.py``, an absolute path, ``file:///...`` or a URI is
refused with 400 and nothing is recorded or stored; a version recorded before that check cannot be
started; and a model folder of ``inferd serve --repository`` whose settings (sent through the
repository API, or on disk, or through a link) name code outside the folder is refused with 400,
its code never run. ``INFERD_ALLOWED_OUTSIDE_TARGETS`` lets an operator allow a location."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from inferd.platform.store import Store
from tests.dialects.repository.conftest import native, write, x_request
from tests.platform.control import Control, control
from tests.platform.test_control import archive_with
from tests.servers import RunningServer, serve

MiB = 1024 * 1024
MAX_GROWTH = 50 * MiB
MAX_SECONDS = 10.0
SETTING = "INFERD_ALLOWED_OUTSIDE_TARGETS"
#: Code that leaves a mark beside itself when it runs: it must never run.
EVIL = """
from pathlib import Path

import inferd

(Path(__file__).parent / "it-ran").write_text("the outside code ran")


class Evil(inferd.Model):
    def predict(self, inputs):
        return {"y": inputs["x"] * 100}
"""


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside every repository and bundle, holding `EVIL` as ``evil.py``."""
    return write(tmp_path_factory.mktemp("elsewhere"), {"evil.py": EVIL})


def peak_memory(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def outside_targets(elsewhere: Path) -> list[str]:
    evil = elsewhere / "evil.py"
    return ["../other/model.py", str(evil), f"{evil}:Evil", f"file://{evil}", "http://127.0.0.1:1/x.py"]


# ---- the platform ----


def push(running: Control, label: str, target: str) -> httpx.Response:
    return running.call(
        "POST",
        "/deployments/m1/versions",
        data={"label": label, "target": target},
        files={"archive": ("bundle.tar.gz", archive_with("model.py"))},
    )


def test_a_version_whose_target_leaves_its_bundle_is_refused(tmp_path: Path, elsewhere: Path) -> None:
    data = tmp_path / "data"
    with control(data) as running:
        assert running.call("POST", "/deployments", json={"name": "m1"}).status_code == 201
        bundles = data / "platform" / "artifacts" / "sha256"
        for number, target in enumerate([*outside_targets(elsewhere), "a/../../x", "s3://bucket/models/"]):
            before = peak_memory(running.process.pid)
            started = time.monotonic()
            answer = push(running, f"v{number}", target)
            assert time.monotonic() - started < MAX_SECONDS
            assert answer.status_code == 400, answer.text
            assert answer.headers["content-type"].startswith("application/json")
            error = answer.json()["error"]
            assert target in error and SETTING in error and "bundle" in error, error
            assert peak_memory(running.process.pid) - before < MAX_GROWTH
            assert running.call("GET", "/deployments/m1/versions").json() == []
            assert not list(bundles.iterdir())
        assert push(running, "good", "model.py").status_code == 201  # the API itself works
        assert push(running, "module", "main:handler").status_code == 201
    assert not (elsewhere / "it-ran").exists()


def test_a_version_recorded_before_the_check_is_not_started(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with control(data) as running:
        running.call("POST", "/deployments", json={"name": "m1"})
        good = push(running, "good", "model.py").json()
    with Store(data / "platform" / "platform.sqlite") as store:
        old = store.add_version(
            good["deployment_id"], "old", good["digest"], good["size"], "../other/model.py"
        )
    with control(data) as running:
        answer = running.call("POST", "/deployments/m1/services", json={"version": old.id})
        assert answer.status_code == 400, answer.text
        assert "../other/model.py" in answer.json()["error"]
        assert running.call("GET", "/deployments/m1/services").json() == []


# ---- a model repository ----


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("confined-repository"), {"doubler/model.py": native(2.0)})


def outside_folder(root: Path, name: str, elsewhere: Path) -> None:
    """Model folder ``name`` whose target leaves it, put into the repository while it is served."""
    if name == "climbs":
        write(root / name, {"inferd.yaml": "target: ../doubler/model.py\n"})
    elif name == "linked":
        write(root / name, {"inferd.yaml": "target: link.py\n"})
        (root / name / "link.py").symlink_to(elsewhere / "evil.py")
    else:
        write(
            root / name, {"model-settings.json": json.dumps({"implementation": f"{elsewhere}/evil.py:Evil"})}
        )


@pytest.fixture(scope="module")
def repository_server(repository: Path) -> Iterator[RunningServer]:
    with serve(f"--repository={repository}", "--no-grpc") as running:
        yield running


def load(server: RunningServer, name: str, config: dict[str, str] | None = None) -> httpx.Response:
    body = None
    if config is not None:
        model = base64.b64encode(native(3.0).encode()).decode()
        body = {"parameters": {"config": json.dumps(config), "file:model.py": model}}
    with server.http() as http:
        return http.post(f"/v2/repository/models/{name}/load", json=body)


def listing(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if "__pycache__" not in path.parts)


def test_a_config_naming_a_target_outside_the_model_folder_is_refused(
    repository_server: RunningServer, repository: Path, elsewhere: Path
) -> None:
    before = listing(repository)
    for target in ["../doubler/model.py", *outside_targets(elsewhere)]:
        memory = repository_server.peak_memory()
        answer = load(repository_server, "sent", {"target": target})
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert "model 'sent'" in error and target in error and "the model's folder" in error, error
        assert repository_server.peak_memory() - memory < MAX_GROWTH
        assert listing(repository) == before
    mlserver = load(repository_server, "sent", {"implementation": f"{elsewhere}/evil.Evil"})
    assert mlserver.status_code == 400 and "the model's folder" in mlserver.json()["error"], mlserver.text
    assert not (elsewhere / "it-ran").exists()


@pytest.mark.parametrize("name", ["climbs", "linked", "mlserver"])
def test_a_model_folder_whose_target_leaves_it_is_refused_at_load(
    repository_server: RunningServer, repository: Path, elsewhere: Path, name: str
) -> None:
    outside_folder(repository, name, elsewhere)
    answer = load(repository_server, name)
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    assert f"model '{name}'" in answer.json()["error"] and SETTING in answer.json()["error"]
    assert not (elsewhere / "it-ran").exists()
    assert load(repository_server, "doubler").status_code == 200
    with repository_server.http() as http:
        assert http.post("/v2/models/doubler/infer", json=x_request(2.0)).json()["outputs"][0]["data"] == [
            4.0
        ]


def test_an_operator_may_allow_a_folder(tmp_path: Path, elsewhere: Path) -> None:
    root = write(tmp_path / "repository", {"shared/inferd.yaml": f"target: {elsewhere}/evil.py\n"})
    with serve(f"--repository={root}", "--no-grpc", "--allowed-outside-target", str(elsewhere)) as running:
        with running.http() as http:
            answer = http.post("/v2/models/shared/infer", json=x_request(1.0))
    assert answer.json()["outputs"][0]["data"] == [100.0], answer.text
    (elsewhere / "it-ran").unlink()
