"""Body limits of the control process per route: a JSON route takes up to ``max_api_body_size`` (1 MiB
here) and answers a larger body 413 naming the limit, serving on; an archive upload still takes an
archive far larger than that (up to ``max_bundle_size``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.platform.control import control

MIB = 1024 * 1024


def test_json_routes_take_small_bodies_and_uploads_large_ones(tmp_path: Path) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "inferd.yaml").write_text("name: big\n")
    (folder / "weights.bin").write_bytes(os.urandom(3 * MIB))  # does not compress: a 3 MiB archive
    with control(tmp_path / "data") as running:
        huge = json.dumps({"name": "x", "description": "d" * (2 * MIB)})
        refused = running.call(
            "POST", "/deployments", content=huge, headers={"content-type": "application/json"}
        )
        assert refused.status_code == 413, refused.text
        said = refused.json()["error"]
        assert str(MIB) in said and "INFERD_MAX_API_BODY_SIZE" in said

        def streamed() -> object:  # no Content-Length: refused while it arrives
            yield huge.encode()

        chunked = running.call("POST", "/deployments", content=streamed())
        assert chunked.status_code == 413 and "INFERD_MAX_API_BODY_SIZE" in chunked.json()["error"]
        assert running.call("POST", "/deployments", json={"name": "big"}).status_code == 201
        assert running.call("GET", "/deployments").json()[0]["name"] == "big"

        pushed = running.verb("push", "big", str(folder), "--label", "1", "--json")
        assert pushed.returncode == 0, pushed.stderr
        version = running.call("GET", "/deployments/big/versions").json()[0]
        assert version["size"] > 3 * MIB
        archive = running.call("GET", f"/versions/{version['id']}/archive")
        assert archive.status_code == 200 and len(archive.content) > 2 * MIB
