"""``inferd apply`` of a KServe InferenceService whose ``storageUri`` is in object storage (moto's
S3 server on loopback): the service's ``inferd serve`` fetches the model folder and serves it
through the endpoint; an unknown scheme is refused before anything is created; a service of a version
whose model URI is missing, refused or unreachable is not created, answered 404, 403 or 502 naming the
URI (without its query string). And a SeldonDeployment whose SKLEARN_SERVER's ``modelUri`` is in the
same bucket, fetched the same way, answering with the ``method`` parameter's estimator method."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.models.sklearn_folder import ROWS, sklearn_model_folder
from tests.platform.control import Control, control
from tests.platform.test_control import archive_with
from tests.platform.workflows.conftest import verb
from tests.platform.workflows.test_apply import INFERENCE_SERVICE, MODEL, seldon_answer, sklearn_deployment
from tests.servers import free_port
from tests.storage.conftest import Bucket
from tests.storage.files_server import file_server


def test_models_from_object_storage(bucket: Bucket, tmp_path: Path) -> None:
    bucket.put("models/scale/inferd.yaml", b"name: scale\n")
    bucket.put("models/scale/model.py", f"FACTOR = 5.0\n{MODEL}".encode())
    manifest = tmp_path / "isvc.yaml"
    uri = f"s3://{bucket.name}/models/scale/"
    manifest.write_text(INFERENCE_SERVICE.replace("${CANARY}", "").replace("./scale", uri))
    allowed = {
        "INFERD_ALLOWED_OUTSIDE_TARGETS": f"s3://{bucket.name}/models/"
    }  # else refused: not the bundle
    with control(tmp_path / "data", env=allowed) as running:  # started after the bucket: AWS_* point at it
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

        classifier = sklearn_model_folder(tmp_path / "iris")
        bucket.put("models/iris/model.joblib", (tmp_path / "iris" / "model.joblib").read_bytes())
        seldon = tmp_path / "seldon" / "sk.yaml"
        seldon.parent.mkdir()
        uri = f"s3://{bucket.name}/models/iris/"
        seldon.write_text(sklearn_deployment("sk", "SKLEARN_SERVER", uri, method="predict"))
        applied = verb(running, "apply", str(seldon))
        assert applied.returncode == 0, applied.stderr + applied.stdout
        assert seldon_answer(running.gateway, "sk")["ndarray"] == classifier.predict(ROWS).tolist()


def refused_service(running: Control, label: str, uri: str) -> dict[str, str | int]:
    """A service of a new version of ``scale`` whose target is ``uri``: refused, and nothing created."""
    pushed = running.call(
        "POST",
        "/deployments/scale/versions",
        data={"label": label, "target": uri},
        files={"archive": ("bundle.tar.gz", archive_with("README"))},
    )
    assert pushed.status_code == 201, pushed.text
    before = running.call("GET", "/deployments/scale/services").json()
    created = running.call("POST", "/deployments/scale/services", json={"version": pushed.json()["id"]})
    assert running.call("GET", "/deployments/scale/services").json() == before
    return {"status": created.status_code, "error": created.json()["error"]}


def test_a_service_of_a_model_uri_the_store_fails_is_refused_with_its_status(
    bucket: Bucket, tmp_path: Path
) -> None:
    missing = f"s3://{bucket.name}/models/missing/"
    closed = f"http://127.0.0.1:{free_port()}/models/scale.tar.gz"
    anywhere = {"INFERD_ALLOWED_OUTSIDE_TARGETS": "*"}
    with file_server() as files, control(tmp_path / "data", env=anywhere) as running:
        running.call("POST", "/deployments", json={"name": "scale"})
        assert refused_service(running, "missing", missing) == {
            "status": 404,
            "error": f"cannot fetch {missing}: no such object or prefix; check the bucket and the path",
        }
        unreachable = refused_service(running, "closed", closed)
        assert unreachable["status"] == 502 and f"cannot fetch {closed}: cannot connect" in str(
            unreachable["error"]
        )
        files.refuse = True
        signed = files.put("/models/scale.tar.gz", b"x") + "?X-Amz-Signature=0123456789abcdef"
        denied = refused_service(running, "signed", signed)
        assert denied["status"] == 403, denied
        assert f"cannot fetch {files.url}/models/scale.tar.gz: the server answers 403" in str(denied["error"])
        assert "0123456789abcdef" not in str(denied["error"])
