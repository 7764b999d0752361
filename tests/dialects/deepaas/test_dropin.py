"""Drop-in gaps: model code importing deepaas's own classes, with and without deepaas installed; a
failing get_metadata; paths of a model that is not served."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.dialects.deepaas.conftest import SITE, serve_demo, site_env
from tests.servers import RunningServer, serve

#: deepaas 2.6.0 installed by `make test` beside the virtualenv with --no-deps (its aiohttp-apispec
#: pins apispec<4, which inferd's Swagger document cannot use).
DEEPAAS = Path(sys.prefix) / "deepaas"
STAND_IN = "inferd.dialects.deepaas.stand_in.UploadedFile"
#: Just enough of deepaas's dependencies (oslo.config, oslo.log, stevedore) for its modules to import.
DEEPAAS_DEPS = Path(__file__).parent / "deepaas-deps"


def _typed_predict(server: RunningServer) -> httpx.Response:
    files = {"data": ("in.txt", b"hello", "text/plain")}
    return httpx.post(f"{server.http_url}/v2/models/typed/predict/", files=files, timeout=30)


def test_model_importing_deepaas_without_deepaas_installed() -> None:
    with serve(
        "demo_models.typed:Typed", "--dialect", "deepaas", "--name", "typed", env=site_env()
    ) as server:
        answer = _typed_predict(server)
        assert answer.status_code == 200, answer.text
        assert answer.json()["predictions"] == {"type": STAND_IN, "size": 5, "name": "in.txt"}
        assert "cannot be imported" not in server.log


def test_model_importing_deepaas_with_deepaas_installed_without_its_dependencies() -> None:
    """deepaas's own modules are on the path but its package imports oslo.log, which --no-deps left
    out: model code gets inferd's classes, and the reason is logged."""
    assert (DEEPAAS / "deepaas" / "model" / "v2" / "wrapper.py").is_file(), "make test installs deepaas"
    env = {"PYTHONPATH": f"{SITE}:{DEEPAAS}"}
    with serve("demo_models.typed:Typed", "--dialect", "deepaas", "--name", "typed", env=env) as server:
        assert "deepaas is installed but cannot be imported" in server.log
        assert "oslo_log" in server.log
        answer = _typed_predict(server)
        assert answer.status_code == 200, answer.text
        assert answer.json()["predictions"]["type"] == STAND_IN


def test_model_importing_deepaas_with_a_working_deepaas_gets_deepaas_uploads() -> None:
    """deepaas imports: the model's BaseModel and UploadedFile are deepaas's own, and so is the class of
    the upload inferd hands it."""
    assert (DEEPAAS / "deepaas" / "model" / "v2" / "wrapper.py").is_file(), "make test installs deepaas"
    env = {"PYTHONPATH": f"{SITE}:{DEEPAAS_DEPS}:{DEEPAAS}"}
    with serve("demo_models.typed:Typed", "--dialect", "deepaas", "--name", "typed", env=env) as server:
        answer = _typed_predict(server)
        assert answer.status_code == 200, answer.text
        assert answer.json()["predictions"] == {
            "type": "deepaas.model.v2.wrapper.UploadedFile",
            "size": 5,
            "name": "in.txt",
        }
        assert "cannot be imported" not in server.log


@pytest.fixture(scope="module")
def nometa(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serve_demo(tmp_path_factory, "demo_models.nometa", "--name", "nometa") as server:
        yield server


def test_failing_get_metadata_only_breaks_the_metadata_routes(nometa: RunningServer) -> None:
    assert nometa.log.count("get_metadata of model 'nometa' failed") == 1
    assert "metadata is not available" in nometa.log
    with httpx.Client(base_url=nometa.http_url, timeout=30) as http:
        for path in ("/v2/models/", "/v2/models/nometa/"):
            failed = http.get(path)
            assert failed.status_code == 500
            assert failed.text == "500 Internal Server Error\n\nServer got itself in trouble"
        assert http.post("/v2/models/nometa/predict/", params={"x": "21"}).json() == {
            "status": "OK",
            "predictions": 42,
        }
        assert http.get("/swagger.json").status_code == 200
    assert nometa.log.count("get_metadata of model 'nometa' failed") == 1


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE"])
@pytest.mark.parametrize(
    "path", ["/v2/models/unknown/predict", "/v2/models/unknown/train", "/v2/models/unknown/x"]
)
def test_paths_of_an_unknown_model_without_slash_are_deepaas_404(
    demo: httpx.Client, method: str, path: str
) -> None:
    answer = demo.request(method, path)
    assert (answer.status_code, answer.text) == (404, "404: Not Found")


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_unknown_model_path_is_deepaas_404_for_every_method(demo: httpx.Client, method: str) -> None:
    answer = demo.request(method, "/v2/models/unknown")
    assert (answer.status_code, answer.text) == (404, "404: Not Found")


def test_unknown_model_path_get_is_v2_model_metadata_404(demo: httpx.Client) -> None:
    """GET /v2/models/<name> is also V2's model metadata path: V2 answers, with 404 too."""
    answer = demo.get("/v2/models/unknown")
    assert answer.status_code == 404 and "unknown" in answer.json()["error"]
