"""``inferd apply`` of a KServe InferenceService whose ``storageUri`` is in object storage (moto's
S3 server on loopback): the service's ``inferd serve`` fetches the model folder and serves it
through the endpoint; an unknown scheme is refused before anything is created."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.platform.control import control
from tests.platform.workflows.conftest import verb
from tests.platform.workflows.test_apply import INFERENCE_SERVICE, MODEL
from tests.storage.conftest import Bucket


def test_an_inference_service_from_object_storage(bucket: Bucket, tmp_path: Path) -> None:
    bucket.put("models/scale/inferd.yaml", b"name: scale\n")
    bucket.put("models/scale/model.py", f"FACTOR = 5.0\n{MODEL}".encode())
    manifest = tmp_path / "isvc.yaml"
    uri = f"s3://{bucket.name}/models/scale/"
    manifest.write_text(INFERENCE_SERVICE.replace("${CANARY}", "").replace("./scale", uri))
    with control(tmp_path / "data") as running:  # started after the bucket: AWS_* point at it
        applied = verb(running, "apply", str(manifest))
        assert applied.returncode == 0, applied.stderr + applied.stdout
        body = {"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [2.0]}]}
        answer = httpx.post(f"{running.gateway}/e/scale/v2/models/scale/infer", json=body, timeout=30)
        assert answer.status_code == 200, answer.text
        assert answer.json()["outputs"][0]["data"] == [10.0]
        (version,) = running.call("GET", "/deployments/scale/versions").json()
        assert version["target"] == uri

        manifest.write_text(INFERENCE_SERVICE.replace("${CANARY}", "").replace("./scale", "ftp://host/m/"))
        refused = verb(running, "apply", str(manifest))
        assert (
            refused.returncode == 2
            and "ftp://host/m/" in refused.stderr
            and "unknown scheme" in refused.stderr
        )
        assert len(running.call("GET", "/deployments/scale/versions").json()) == 1
