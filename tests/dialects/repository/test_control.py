"""The repository API writing models: tritonclient's ``load_model(config=..., files=...)`` over gRPC
(its HTTP client cannot send files: it puts bytes into json.dumps), the same load as base64 over REST,
what is refused before anything is written, and the limits of a model added while the server runs."""

from __future__ import annotations

import base64
import json
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import tritonclient.grpc as grpcclient

from tests.dialects.repository.conftest import native, write, x_request, y_of
from tests.servers import serve

SLOW = textwrap.dedent("""
    import asyncio

    import inferd

    class Slow(inferd.Model):
        async def predict(self, inputs):
            await asyncio.sleep(0.5)
            return {"y": inputs["x"]}
""")


def test_tritonclient_loads_a_model_from_its_config_and_files(tmp_path: Path) -> None:
    root = tmp_path / "models"
    write(root / "first", {"model.py": native(1.0)})
    with serve(f"--repository={root}") as server:
        assert server.grpc_address is not None
        client = grpcclient.InferenceServerClient(server.grpc_address)
        config = json.dumps({"dialect": "native", "target": "model.py", "versions": "all"})
        files = {"file:1/model.py": native(5.0).encode(), "file:2/model.py": native(6.0).encode()}
        client.load_model("sent", config=config, files=files)
        assert y_of(server.http_url, "sent", 1.0) == [6.0]
        assert y_of(server.http_url, "sent/versions/1", 1.0) == [5.0]
        assert (root / "sent" / "1" / "model.py").read_text() == native(5.0)

        client.load_model("sent", config=config, files={"file:1/model.py": native(8.0).encode()})
        assert y_of(server.http_url, "sent", 1.0) == [8.0]  # the folder was replaced: version 2 is gone
        assert (
            httpx.post(f"{server.http_url}/v2/models/sent/versions/2/infer", json=x_request(1.0)).status_code
            == 404
        )
        client.close()


@pytest.mark.parametrize(
    ("name", "parameters", "problem"),
    [
        ("escape", {"file:../outside.py": "eA=="}, "'..'"),
        ("absolute", {"file:/etc/passwd": "eA=="}, "absolute"),
        ("bad name", {"file:model.py": "eA=="}, "name"),
    ],
)
def test_a_load_that_would_write_outside_the_repository_is_refused(
    tmp_path: Path, name: str, parameters: dict[str, str], problem: str
) -> None:
    root = tmp_path / "models"
    write(root / "first", {"model.py": native(1.0)})
    with serve(f"--repository={root}") as server:
        body = {"parameters": {"config": json.dumps({"dialect": "native"}), **parameters}}
        refused = httpx.post(f"{server.http_url}/v2/repository/models/{name}/load", json=body)
        assert refused.status_code == 400, refused.text
        assert problem in refused.json()["error"]
        assert sorted(path.name for path in root.iterdir()) == ["first"]
        assert not (tmp_path / "outside.py").exists()
        assert y_of(server.http_url, "first", 1.0) == [1.0]


def test_a_rest_load_with_base64_files_serves_them(tmp_path: Path) -> None:
    root = tmp_path / "models"
    write(root / "first", {"model.py": native(1.0)})
    with serve(f"--repository={root}") as server:
        content = base64.b64encode(native(9.0).encode()).decode()
        body = {"parameters": {"config": json.dumps({"dialect": "native"}), "file:model.py": content}}
        loaded = httpx.post(f"{server.http_url}/v2/repository/models/posted/load", json=body)
        assert loaded.status_code == 200, loaded.text
        assert y_of(server.http_url, "posted", 1.0) == [9.0]


def test_a_model_added_while_serving_has_its_own_limits(tmp_path: Path) -> None:
    root = tmp_path / "models"
    write(root / "first", {"model.py": native(1.0)})
    env = {"INFERD_MODELS__LATE__MAX_CONCURRENCY": "1", "INFERD_MODELS__LATE__MAX_QUEUE_SIZE": "1"}
    with serve(f"--repository={root}", "--repository-poll", "0.3", env=env) as server:
        write(root / "late", {"model.py": SLOW})
        server.wait_for_log("model late loaded", timeout=15)
        with ThreadPoolExecutor(4) as pool:
            codes = list(
                pool.map(
                    lambda _: (
                        httpx.post(
                            f"{server.http_url}/v2/models/late/infer", json=x_request(1.0), timeout=10
                        ).status_code
                    ),
                    range(4),
                )
            )
        assert sorted(codes) == [200, 200, 503, 503]  # one at a time, one waiting, the others shed
