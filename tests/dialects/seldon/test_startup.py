"""Starting a Seldon component the ways seldon-core-microservice is started, and failing clearly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.dialects.seldon.conftest import COMPONENTS
from tests.servers import inferd_command, serve, with_this_tree

#: seldon-core 1.18.2 installed by `make test` beside the virtualenv (its pins do not fit inferd's).
SELDON_CORE = Path(sys.prefix) / "seldon-core"


def start(target: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``inferd serve TARGET --dialect seldon ARGS`` from the components' folder, with this checkout's
    inferd, for a start that is expected to fail."""
    command = inferd_command("serve", target, "--dialect", "seldon", *args)
    environ = with_this_tree({**os.environ, **(env or {})})
    return subprocess.run(command, cwd=COMPONENTS, capture_output=True, text=True, timeout=60, env=environ)


@pytest.mark.parametrize(
    ("target", "extra"),
    [("nested.models.Nested", ()), ("nested.models:Nested", ()), ("", ())],
)
def test_class_naming_forms(target: str, extra: tuple[str, ...]) -> None:
    env = {"MODEL_NAME": "nested.models.Nested"}
    args = ("--dialect", "seldon") if target else ()
    with serve(target, *args, *extra, env=env, cwd=COMPONENTS) as server:
        assert server.models == ["nested"]
        body = httpx.post(f"{server.http_url}/predict", json={"strData": "x"}).json()
        assert body == {"jsonData": {"nested": True}, "meta": {}}


def test_dialect_is_detected_from_the_class() -> None:
    with serve("Identity", cwd=COMPONENTS) as server:
        assert httpx.get(f"{server.http_url}/health/ping").text == "pong"


@pytest.mark.parametrize(
    ("service_type", "expected"),
    [("MODEL", [[3.0, 6.0]]), ("TRANSFORMER", [[2.0, 4.0]]), ("OUTPUT_TRANSFORMER", [[2.0, 3.0]])],
)
def test_service_type_picks_the_v2_method(service_type: str, expected: list[list[float]]) -> None:
    parameters = json.dumps([{"name": "factor", "value": "3", "type": "INT"}])
    args = ("--dialect", "seldon", "--service-type", service_type, "--parameters", parameters)
    with serve("Everything", *args, cwd=COMPONENTS) as server:
        body = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP64", "data": [1, 2]}]}
        answer = httpx.post(f"{server.http_url}/v2/models/everything/infer", json=body).json()
        assert answer["outputs"][0]["data"] == [value for row in expected for value in row]
        # Every Seldon route is served whatever the type says.
        assert httpx.post(f"{server.http_url}/route", json={"data": {"ndarray": [[1]]}}).status_code == 200


def test_parameters_from_the_environment() -> None:
    parameters = json.dumps([{"name": "label", "value": "from-env", "type": "STRING"}])
    env = {"PREDICTIVE_UNIT_PARAMETERS": parameters}
    with serve("Everything", "--dialect", "seldon", env=env, cwd=COMPONENTS) as server:
        config = httpx.post(f"{server.http_url}/predict", json={"strData": "config"}).json()["jsonData"]
        assert config["label"] == "from-env"


def test_v2_errors_from_seldon_exceptions_are_client_errors() -> None:
    with serve("Everything", "--dialect", "seldon", cwd=COMPONENTS) as server:
        body = {"inputs": [{"name": "x", "shape": [1], "datatype": "INT64", "data": [0]}]}
        response = httpx.post(f"{server.http_url}/v2/models/everything/infer", json=body)
        assert response.status_code == 400
        assert response.json() == {"error": "nope"}


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ('[{"name": "factor", "value": "x", "type": "INT"}]', "factor='x' is not a valid INT"),
        ('[{"name": "factor", "value": "1", "type": "COMPLEX"}]', "unknown type 'COMPLEX'"),
        ('{"name": "factor"}', "must be a JSON list"),
        ("[{", "not JSON"),
        ('[{"name": "enabled", "value": "maybe", "type": "BOOL"}]', "is not a valid BOOL"),
    ],
)
def test_bad_parameters_stop_startup(parameters: str, message: str) -> None:
    done = start("Everything", "--parameters", parameters)
    assert done.returncode == 2
    assert "MICROSERVICE_BAD_PARAMETER" in done.stderr and message in done.stderr


def test_bad_parameters_are_reported_before_a_wrong_class_name() -> None:
    """seldon-core-microservice parses the parameters before it imports the class."""
    bad = '[{"name": "factor", "value": "x", "type": "INT"}]'
    for extra, env in ((("--parameters", bad), {}), ((), {"PREDICTIVE_UNIT_PARAMETERS": bad})):
        done = start("NoSuchModel", *extra, env=env)
        assert done.returncode == 2
        assert "MICROSERVICE_BAD_PARAMETER" in done.stderr and "NoSuchModel" not in done.stderr


def test_unknown_class_is_a_clear_error() -> None:
    done = start("NoSuchModel")
    assert done.returncode == 2
    assert "no module named 'NoSuchModel'" in done.stderr


def test_user_code_importing_an_installed_seldon_core_works() -> None:
    """seldon-core 1.18 is on the path: its generated protobuf code cannot load beside inferd's, so its
    user_model and flask_utils resolve to inferd's equivalents, and the component works unchanged."""
    assert (SELDON_CORE / "seldon_core" / "user_model.py").is_file(), "make test installs seldon-core"
    env = {"PYTHONPATH": str(SELDON_CORE)}
    with serve("Everything", "--dialect", "seldon", env=env, cwd=COMPONENTS) as server:
        assert "seldon-core is installed but cannot be imported" in server.log
        with httpx.Client(base_url=server.http_url) as http:
            denied = http.post("/predict", json={"data": {"ndarray": [[0]]}})
            assert denied.status_code == 403 and denied.json()["status"]["reason"] == "MY_REASON"
            runtime = http.post("/predict", json={"data": {"ndarray": [[7, 7]]}}).json()
            assert runtime["meta"]["tags"]["rt"] == "yes"


def test_grpc_workers_zero_turns_grpc_off() -> None:
    with serve("Identity", "--dialect", "seldon", env={"GRPC_WORKERS": "0"}, cwd=COMPONENTS) as server:
        assert server.grpc_address is None
        assert httpx.get(f"{server.http_url}/health/ping").text == "pong"
