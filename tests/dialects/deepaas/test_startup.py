"""Finding DEEPaaS models, the command line, base paths and disabled docs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx

from tests.dialects.deepaas.conftest import SITE, site_env
from tests.servers import inferd_command, serve


def run(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        inferd_command(*args),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def test_no_model_found_says_how_to_register_one(tmp_path: Path) -> None:
    done = run("serve", "--dialect", "deepaas", "--port", "0", "--data-dir", str(tmp_path))
    assert done.returncode == 2
    assert "no DEEPaaS model found" in done.stderr and "deepaas.v2.model" in done.stderr
    assert "[project.entry-points" in done.stderr


def test_unknown_model_name_exits_1(tmp_path: Path) -> None:
    args = (
        "serve",
        "--dialect",
        "deepaas",
        "--model-name",
        "nope",
        "--port",
        "0",
        "--data-dir",
        str(tmp_path),
    )
    done = run(*args, env=site_env())
    assert done.returncode == 1
    assert "Model 'nope' not found in namespace 'deepaas.v2.model'" in done.stderr


def test_model_name_from_the_environment(tmp_path: Path) -> None:
    env = site_env(DEEPAAS_V2_MODEL="moduly")
    with serve("", "--data-dir", str(tmp_path), env=env) as server:
        assert server.models == ["moduly"]


def test_direct_target_with_a_name_and_a_base_path(tmp_path: Path) -> None:
    args = ("--dialect", "deepaas", "--name", "mini", "--base-path", "/custom", "--data-dir", str(tmp_path))
    with (
        serve("demo_models.minimal:Minimal", *args, cwd=SITE) as server,
        httpx.Client(base_url=server.http_url) as http,
    ):
        assert server.models == ["mini"]
        versions = http.get("/custom").json()
        assert versions["links"][1]["href"] == "/custom/swagger.json"
        assert versions["versions"][0]["links"][0]["href"] == "/custom/v2/"
        assert "inferd: models" in http.get("/").text  # outside the base path: inferd's own page
        assert http.get("/custom/").status_code == 404
        metadata = http.get("/custom/v2/models/mini/").json()
        assert metadata == {
            "id": "0",
            "name": "mini",
            "links": [{"rel": "self", "href": "/custom/v2/models/mini"}],
            "description": "Could not load description from underlying model (loaded 'mini')",
        }
        answer = http.post("/custom/v2/models/mini/predict/")
        assert answer.json() == {"status": "OK", "predictions": [1, 2, 3]}
        assert http.post("/custom/v2/models/mini/train/").status_code == 501
        assert http.get("/custom/api").status_code == 200


def test_docs_can_be_turned_off(tmp_path: Path) -> None:
    args = ("--dialect", "deepaas", "--model-name", "moduly", "--nodoc-endpoint", "--data-dir", str(tmp_path))
    with serve("", *args, env=site_env()) as server, httpx.Client(base_url=server.http_url) as http:
        assert http.get("/api").status_code == 404
        assert http.get("/ui").status_code == 404
        assert [link["rel"] for link in http.get("/").json()["links"]] == ["describedby"]
        assert http.get("/swagger.json").json()["swagger"] == "2.0"


def test_cli_predict_and_train(tmp_path: Path) -> None:
    upload = tmp_path / "input.txt"
    upload.write_text("from a file")
    arguments = ["--arg", "number=3", "--arg", "tags=a", "--arg", "tags=b", "--file", f"data={upload}"]
    done = run("predict", "--dialect", "deepaas", "classy", *arguments, env=site_env())
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["args"]["number"] == 3 and answer["args"]["tags"] == ["a", "b"]
    assert answer["content"] == "from a file"
    assert answer["args"]["data"]["original_filename"] == "input.txt"
    assert not Path(answer["args"]["data"]["path"]).exists()
    trained = run("train", "classy", "--arg", "epochs=2", env=site_env())
    assert trained.returncode == 0, trained.stderr
    record = json.loads(trained.stdout)
    assert record["status"] == "done" and record["result"]["output"]["epochs"] == 2
    bad = run("predict", "--dialect", "deepaas", "classy", "--arg", "number=x", env=site_env())
    assert bad.returncode == 2 and "Not a valid integer." in bad.stderr
    png_arguments = ("--arg", "parameter=1", "--arg", "accept=image/png")
    png = subprocess.run(
        inferd_command("predict", "--dialect", "deepaas", "deepaas-test", *arguments[-2:], *png_arguments),
        capture_output=True,
        timeout=60,
    )
    assert png.returncode == 0, png.stderr
    assert png.stdout.startswith(b"\x89PNG\r\n\x1a\n")


def test_apispec_3_from_a_full_deepaas_install_is_refused_clearly(tmp_path: Path) -> None:
    """deepaas 2.x installed with its dependencies leaves apispec 3 behind (aiohttp-apispec pins it):
    inferd says so at start-up instead of failing on /swagger.json. Only the installed version is
    read, so a distribution record of apispec 3.3.2 first on the path stands for that install."""
    record = tmp_path / "apispec-3.3.2.dist-info"
    record.mkdir()
    (record / "METADATA").write_text("Metadata-Version: 2.1\nName: apispec\nVersion: 3.3.2\n")
    env = site_env(PYTHONPATH=f"{tmp_path}:{SITE}")
    done = run("serve", "--dialect", "deepaas", "--port", "0", "--data-dir", str(tmp_path), env=env)
    assert done.returncode == 2
    assert "apispec 3.3.2 is installed" in done.stderr and "apispec>=6" in done.stderr
