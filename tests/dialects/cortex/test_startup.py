"""Start-up: detection, and projects that must stop ``inferd serve`` with exit code 2 (1 for a model
that cannot be fetched) and a clear message."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx
import pytest

from inferd.dialects import detect
from tests.dialects.cortex import projects
from tests.dialects.cortex.conftest import make_project
from tests.dialects.cortex.projects import SETOSA
from tests.servers import free_port, inferd_command, serve


def serve_fails(target: Path) -> str:
    command = inferd_command("serve", str(target), "--port", "0", "--grpc-port", "0")
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    return " ".join(done.stderr.split())


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            projects.BAD_SIGNATURE,
            "error: api bad: request_handler handler.py: function pre_inference: expected function arguments "
            "arguments (sample, metadata) but found (sample, extra)",
        ),
        (
            projects.ONNX_SIGNATURE_KEY,
            "error: api adder: tf_signature_key: key is only valid for tensorflow models",
        ),
        (
            projects.BAD_SYNTAX,
            "error: api bad: request_handler handlers/handler.py: cannot load it: SyntaxError: "
            "expected ':' (handler.py, line 1)",
        ),
        (
            projects.BAD_IMPORT,
            "error: api bad: predictor predictor.py: cannot load it: ModuleNotFoundError: "
            "No module named 'inferd_test_module_that_is_not_installed' (line 3)",
        ),
    ],
    ids=["signature", "signature-key", "syntax-error", "import-error"],
)
def test_bad_projects_exit_2(
    files: dict[str, str], message: str, projects_root: Path, models_dir: Path, request: pytest.FixtureRequest
) -> None:
    folder = make_project(
        projects_root, request.node.callspec.id, files, {"adder.onnx": models_dir / "adder.onnx"}
    )
    assert message in serve_fails(folder / "cortex.yaml")


@pytest.mark.parametrize("uri", ["ftp://bucket/iris.onnx", "s3://bucket/export/"])
def test_a_model_that_cannot_be_fetched_stops_startup_naming_api_and_uri(
    uri: str, projects_root: Path
) -> None:
    """An unknown scheme, and S3 at an endpoint nothing listens on: exit 1 (the model cannot be
    loaded), a message naming the API and the URI, never a "no such file" for a local file of that
    name."""
    folder = projects.write(projects_root / f"remote-{uri.split(':')[0]}", projects.remote(uri))
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",  # nothing listens there
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "INFERD_DATA_DIR": str(projects_root / "data"),
    }
    command = inferd_command("serve", str(folder), "--port", "0", "--grpc-port", "0")
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    message = " ".join(done.stderr.split())
    assert done.returncode == 1, message
    assert f"error: api remote: cannot fetch {uri}" in message
    assert "no such file" not in message
    assert not any((projects_root / "data" / "model-cache").glob("*/*")), "nothing half-fetched is kept"


def test_detects_cortex_yaml_and_its_directory(v08_project: Path) -> None:
    assert detect(str(v08_project / "cortex.yaml")).name == "cortex"
    assert detect(str(v08_project)).name == "cortex"


def test_workers_share_tracker_metrics(v10_project: Path) -> None:
    """Two worker processes, a target relative to the cwd (each worker changes into the project dir)."""
    target = f"{v10_project.name}/cortex.yaml"
    with serve(target, "--workers", "2", "--no-grpc", cwd=v10_project.parent) as server:
        with httpx.Client(base_url=server.http_url, timeout=30) as http:
            for _ in range(6):
                assert http.post("/iris/classifier", json=SETOSA).json()["label"] == "iris-setosa"
            text = http.get("/metrics").text
    assert 'cortex_tracker_predictions_total{api="iris",class="iris-setosa"} 6.0' in text
