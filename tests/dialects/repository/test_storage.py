"""A repository in S3 (moto's server): fetched whole into the model cache and served; a poll serves
what changed in the bucket; a prefix that is not there stops start-up naming it, leaving nothing in
the cache; the repository API answers a load the store fails with the store's status (404 for a
prefix gone, 502 for a store that does not answer), naming the URI."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest
import tritonclient.grpc as grpcclient
from moto.server import ThreadedMotoServer

from tests.dialects.repository.conftest import native, y_of
from tests.dialects.repository.test_serving import start_fails, status, wait_for
from tests.servers import free_port, inferd_command, serve, with_this_tree
from tests.storage.conftest import Bucket


def test_a_repository_in_s3_is_served_and_polled(bucket: Bucket, tmp_path: Path) -> None:
    bucket.put("models/doubler/model.py", native(2.0).encode())
    bucket.put("models/scorer/inferd.yaml", b"versions: all\n")
    bucket.put("models/scorer/1/model.py", native(1.0).encode())
    bucket.put("models/scorer/2/model.py", native(2.0).encode())
    uri = f"s3://{bucket.name}/models/"
    data = tmp_path / "data"
    with serve(f"--repository={uri}", "--repository-poll", "0.5", "--data-dir", str(data)) as server:
        url = server.http_url
        assert sorted(server.models) == ["doubler", "scorer"]
        assert y_of(url, "doubler", 3.0) == [6.0]
        assert y_of(url, "scorer/versions/1", 3.0) == [3.0]
        listed = {
            (model["name"], model["version"]): model
            for model in httpx.get(f"{url}/inferd/api/models").json()["models"]
        }
        doubler = listed[("doubler", None)]
        assert doubler["source"] == f"{uri}doubler/" and doubler["dialect"] == "native"
        assert doubler["cache"].startswith("downloaded, version sha256:")
        assert listed[("scorer", "2")]["state"] == "READY"
        shown = subprocess.run(
            inferd_command("models", "--url", url),
            capture_output=True,
            text=True,
            timeout=60,
            env=with_this_tree({}),
        ).stdout
        assert f"{uri}doubler/" in shown and "downloaded" in shown
        bucket.put("models/added/model.py", native(7.0).encode())
        wait_for(lambda: status(url, "added") == 200)
        assert y_of(url, "added", 1.0) == [7.0]
        bucket.put("models/doubler/model.py", native(4.0).encode())
        wait_for(lambda: y_of(url, "doubler", 1.0) == [4.0])
        log = server.log
    assert f"model doubler changed from {uri}doubler/" in log
    assert "model scorer (version 1) changed" not in log  # its files did not change: not reloaded


def test_a_missing_prefix_stops_start_up_naming_it_and_caches_nothing(bucket: Bucket, tmp_path: Path) -> None:
    uri = f"s3://{bucket.name}/nothing-here/"
    data = tmp_path / "data"
    assert f"cannot fetch {uri}" in start_fails(f"--repository={uri}", "--data-dir", str(data))
    assert list((data / "model-cache" / "entries").glob("*")) == []


def test_a_load_the_store_fails_gets_the_stores_status(
    bucket: Bucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket.put("models/doubler/model.py", native(2.0).encode())
    uri = f"s3://{bucket.name}/models/"
    # a second endpoint of the same S3 (moto's buckets are this process's): stopped, it is unreachable
    port = free_port()
    store = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    store.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    try:
        with serve(f"--repository={uri}", "--data-dir", str(tmp_path / "data")) as server:
            load = f"{server.http_url}/v2/repository/models/doubler/load"
            bucket.client.delete_object(Bucket=bucket.name, Key="models/doubler/model.py")
            gone = httpx.post(load, timeout=30)
            assert gone.status_code == 404 and f"cannot fetch {uri}" in gone.json()["error"], gone.text
            store.stop()
            down = httpx.post(load, timeout=30)
            assert down.status_code == 502, down.text
            assert f"cannot fetch {uri}: the S3 endpoint does not answer" in down.json()["error"]
            assert server.grpc_address is not None
            client = grpcclient.InferenceServerClient(server.grpc_address)
            with pytest.raises(Exception, match=r"StatusCode\.UNAVAILABLE") as refused:
                client.load_model("doubler")
            assert f"cannot fetch {uri}" in str(refused.value)
            client.close()
    finally:
        store.stop()
