"""The artifact store with its copy in object storage, on moto's S3 server on loopback: a bundle is
uploaded once, a data folder that lacks it fetches it (digest checked) and unpacks it, and an object
changed in the store is refused with nothing left behind."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from inferd.core.errors import NotFound
from inferd.platform.artifacts import ArtifactStore
from inferd.platform.bundle_copies import BundleCopies
from inferd.platform.service_tokens import ServiceTokens
from inferd.storage.errors import StorageError
from tests.platform.control import control
from tests.platform.runs.test_runs import push
from tests.platform.test_control import REQUEST, wait_state
from tests.platform.test_control import project as scaling
from tests.storage.conftest import Bucket


def store(root: Path, prefix: str) -> ArtifactStore:
    return ArtifactStore(root, 10**6, copies=BundleCopies(prefix))


def project(folder: Path) -> Path:
    folder.mkdir()
    (folder / "model.py").write_text("VALUE = 1\n")
    (folder / "inferd.yaml").write_text("name: one\n")
    return folder


def versions_of(bucket: Bucket, key: str) -> int:
    return len(bucket.client.list_object_versions(Bucket=bucket.name, Prefix=key).get("Versions", []))


def test_bundles_are_uploaded_once_and_fetched_where_missing(bucket: Bucket, tmp_path: Path) -> None:
    bucket.client.put_bucket_versioning(Bucket=bucket.name, VersioningConfiguration={"Status": "Enabled"})
    prefix = f"s3://{bucket.name}/bundles"
    pushed = store(tmp_path / "a", prefix).put_folder(project(tmp_path / "p"))
    key = f"bundles/sha256/{pushed.digest.split(':')[1]}.tar.gz"
    assert bucket.client.get_object(Bucket=bucket.name, Key=key)["Body"].read() == pushed.path.read_bytes()
    again = store(tmp_path / "b", prefix)  # another data folder sharing the bucket
    assert again.put_folder(tmp_path / "p").digest == pushed.digest
    assert versions_of(bucket, key) == 1  # the same content is not uploaded twice

    fresh = store(tmp_path / "c", prefix)
    unpacked = fresh.unpack(pushed.digest, tmp_path / "unpacked")
    assert (unpacked / "model.py").read_text() == "VALUE = 1\n"
    assert fresh.open(pushed.digest).read_bytes() == pushed.path.read_bytes()  # now in its cache

    gone = store(tmp_path / "d", f"s3://{bucket.name}-gone/bundles/")
    with pytest.raises(StorageError, match=f"cannot write s3://{bucket.name}-gone/bundles/sha256/"):
        gone.put_folder(tmp_path / "p")

    missing = "sha256:" + "0" * 64
    with pytest.raises(NotFound, match=f"{missing} does not exist here nor in s3://{bucket.name}/bundles/"):
        fresh.open(missing)


def test_a_changed_object_is_refused(bucket: Bucket, tmp_path: Path) -> None:
    prefix = f"s3://{bucket.name}/bundles/"
    pushed = store(tmp_path / "a", prefix).put_folder(project(tmp_path / "p"))
    hex = pushed.digest.split(":")[1]
    bucket.put(f"bundles/sha256/{hex}.tar.gz", b"not the bundle")
    fresh = store(tmp_path / "c", prefix)
    uri = f"{prefix}sha256/{hex}.tar.gz"
    with pytest.raises(StorageError, match=f"cannot fetch {re.escape(uri)}: its bytes hash to sha256:"):
        fresh.unpack(pushed.digest, tmp_path / "unpacked")
    assert not (tmp_path / "unpacked").exists()
    assert [path.name for path in (tmp_path / "c").rglob("*")] == ["sha256"]  # nothing kept


def test_a_service_starts_from_the_copy_in_object_storage(bucket: Bucket, tmp_path: Path) -> None:
    prefix = f"s3://{bucket.name}/bundles/"
    data = tmp_path / "data"
    with control(data, env={"INFERD_ARTIFACT_STORE": prefix}) as running:
        running.call("POST", "/deployments", json={"name": "app"})
        version = push(running, scaling(tmp_path / "p", 3.0), "1")
        digest = running.call("GET", f"/versions/{version}").json()["digest"]
        key = f"bundles/sha256/{digest.split(':')[1]}.tar.gz"
        assert bucket.client.head_object(Bucket=bucket.name, Key=key)["ContentLength"] > 0
        for cached in (data / "platform" / "artifacts" / "sha256").iterdir():
            cached.unlink()  # as on a new machine: only the bucket has it

        lost = push(running, scaling(tmp_path / "q", 4.0), "2")
        lost_digest = running.call("GET", f"/versions/{lost}").json()["digest"]
        (data / "platform" / "artifacts" / "sha256" / f"{lost_digest.split(':')[1]}.tar.gz").unlink()
        bucket.client.delete_object(
            Bucket=bucket.name, Key=f"bundles/sha256/{lost_digest.split(':')[1]}.tar.gz"
        )
        refused = running.call("POST", "/deployments/app/services", json={"version": lost})
        assert refused.status_code == 404 and lost_digest in refused.json()["error"], refused.text
        assert running.call("GET", "/deployments/app/services").json() == []  # nothing recorded

        created = running.call("POST", "/deployments/app/services", json={"version": version})
        assert created.status_code == 201, created.text
        service = wait_state(running, created.json()["id"], "running")
        token = ServiceTokens(data / "platform").of(service["id"])  # a service takes its own token only
        answer = httpx.post(
            f"http://127.0.0.1:{service['port']}/v2/models/scale/infer",
            json=REQUEST,
            headers={"authorization": f"Bearer {token}"},
        )
        assert answer.json()["outputs"][0]["data"] == [3.0]
        assert (data / "platform" / "artifacts" / "sha256" / f"{digest.split(':')[1]}.tar.gz").is_file()
