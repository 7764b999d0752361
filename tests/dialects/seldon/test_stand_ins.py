"""seldon-core's helper modules without seldon-core: ``seldon_core.utils``, ``metrics``,
``proto.prediction_pb2(_grpc)`` and ``seldon_client`` resolve to inferd's stand-ins, answer as
seldon-core 1.18 does, and work in a served component and against a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import httpx
import numpy as np
import pytest
from google.protobuf import json_format

from inferd.dialects.seldon.stand_in import install_aliases
from tests.dialects.seldon.conftest import COMPONENTS
from tests.servers import ROOT, RunningServer, serve, served

SELDON_CORE = Path(sys.prefix) / "seldon-core"
SCRIPT = Path(__file__).parent / "shim_calls.py"

install_aliases()  # as a component's own unit tests would, in their conftest.py

from seldon_core import utils  # noqa: E402
from seldon_core.proto import prediction_pb2, prediction_pb2_grpc  # noqa: E402
from seldon_core.seldon_client import SeldonCallCredentials, SeldonClient, SeldonClientException  # noqa: E402

shims_server = served(lambda: serve("Shims", "--dialect", "seldon", cwd=COMPONENTS), scope="module")


def run_scripts(server: RunningServer, *modes: str) -> list[dict[str, Any]]:
    """shim_calls.py, side by side, against seldon-core 1.18 (its generated code loads only with
    protobuf's Python implementation) or against inferd's stand-ins (seldon-core not on the path)."""
    assert server.grpc_address is not None
    runs = []
    for mode in modes:
        env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
        env["SHIM_FLAG"] = "true"
        if mode == "seldon-core":
            env.update(PYTHONPATH=str(SELDON_CORE), PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python")
        else:
            env["PYTHONPATH"] = str(ROOT)
        command = [sys.executable, str(SCRIPT), mode, server.http_address, server.grpc_address]
        runs.append(
            subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    results = []
    for run in runs:
        out, err = run.communicate(timeout=60)
        assert run.returncode == 0, err
        results.append(json.loads(out))
    return results


def test_helpers_and_client_give_what_seldon_core_gives(identity_server: RunningServer) -> None:
    """The same user code, once on seldon-core 1.18 and once on the stand-ins: every helper's result
    (messages compared byte for byte, tuples and dtypes kept) and every client call's are equal."""
    assert (SELDON_CORE / "seldon_core" / "utils.py").is_file(), "make test installs seldon-core"
    ours, theirs = run_scripts(identity_server, "inferd", "seldon-core")
    assert ours == theirs
    # ... and they are answers, not only errors on both sides:
    assert ours["utils"]["response-json/tensor/ints/Component"]["data"]["tensor"] == {
        "shape": {"tuple": [2, 2]},
        "values": [1, 2, 3, 4],
    }
    assert ours["client"]["grpc/micro/tensor"]["success"] is True
    assert ours["client"]["rest/gateway/feedback"]["success"] is True
    assert ours["metrics"]["made"][0] == {"key": "c", "type": "COUNTER", "value": 1}


def test_a_component_built_with_the_helpers_is_served(shims_server: RunningServer) -> None:
    request = {"data": {"names": ["a", "b"], "ndarray": [[1, 2]]}, "meta": {"puid": "p", "tags": {"t": "x"}}}
    with httpx.Client(base_url=shims_server.http_url) as http:
        answer = http.post("/predict", json=request).json()
        assert answer == {
            "data": {"names": ["low", "high"], "ndarray": [[2.0, 4.0]]},
            "meta": {
                "puid": "p",
                "tags": {"t": "x", "component": "shims", "proto": False},
                "metrics": [
                    {"key": "shim_rows", "type": "GAUGE", "value": 1.0},
                    {"key": "shim_time", "type": "TIMER", "value": 2.5},
                ],
            },
        }
        transformed = http.post(
            "/transform-input", json={"data": {"tensor": {"shape": [1, 2], "values": [1, 2]}}}
        )
        assert transformed.json() == {
            "data": {"names": ["x", "y"], "tensor": {"shape": [1, 2], "values": [2, 3]}},
            "meta": {"tags": {"component": "shims"}},
        }
        feedback = http.post("/send-feedback", json={"request": request, "reward": 0.5}).json()
        assert feedback["data"]["ndarray"] == [[0.5, 2.0]] and feedback["meta"]["puid"] == "p"
        bad = http.post("/predict", json={"data": {"ndarray": [[1]]}, "nonsense": 1})
        assert bad.status_code == 400 and bad.json()["status"]["info"].startswith("Invalid JSON")
        exposition = http.get("/metrics").text
    assert "shim_rows{" in exposition and "shim_time_bucket{" in exposition


def test_the_component_reads_grpc_messages_as_seldon_core_types(shims_server: RunningServer) -> None:
    assert shims_server.grpc_address is not None
    request = json_format.ParseDict(
        {"data": {"tensor": {"shape": [1, 2], "values": [1, 3]}}}, prediction_pb2.SeldonMessage()
    )
    with grpc.insecure_channel(shims_server.grpc_address) as channel:
        answer = prediction_pb2_grpc.ModelStub(channel).Predict(request)
    assert json_format.MessageToDict(answer)["data"] == {
        "names": ["low", "high"],
        "tensor": {"shape": [1, 2], "values": [2.0, 6.0]},
    }
    assert answer.meta.tags["proto"].bool_value is True


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_seldon_client_against_a_served_component(shims_server: RunningServer, transport: str) -> None:
    endpoint = shims_server.http_address if transport == "rest" else shims_server.grpc_address
    client = SeldonClient(
        gateway="seldon", transport=transport, gateway_endpoint=endpoint, microservice_endpoint=endpoint
    )
    data = np.array([[1.0, 2.0], [3.0, 4.0]])
    micro = client.microservice(method="predict", data=data, payload_type="ndarray", names=["a", "b"])
    assert micro.success, micro.msg
    assert utils.get_data_from_proto(micro.response).tolist() == [[2.0, 4.0], [6.0, 8.0]]
    assert micro.response.meta.tags["component"].string_value == "shims"
    predicted = client.predict(data=data, meta={"who": "test"}, client_return_type="proto")
    assert predicted.success and list(predicted.response.data.names) == ["low", "high"]
    if transport == "rest":  # the Seldon gRPC service gets no meta from seldon-core's client either
        assert predicted.response.meta.tags["who"].string_value == "test"
    as_dict = client.predict(data=data, payload_type="tensor", client_return_type="dict")
    assert as_dict.response["data"]["tensor"] == {"shape": [2, 2], "values": [2.0, 4.0, 6.0, 8.0]}
    feedback = client.feedback(predicted.request, predicted.response, reward=3.0, client_return_type="proto")
    assert feedback.success and utils.get_data_from_proto(feedback.response)[0][0] == 3.0
    direct = client.microservice_feedback(predicted.request, predicted.response, reward=1.5)
    assert direct.success and utils.get_data_from_proto(direct.response)[0][0] == 1.5
    missing = client.microservice(method="route", data=data)
    assert not missing.success and missing.msg  # Shims has no route: a failed result, not an exception


def test_seldon_client_ingress_gateways(shims_server: RunningServer) -> None:
    """ambassador/istio: gRPC carries the routing metadata (inferd ignores it); REST builds the
    ingress path, which a single component does not serve."""
    assert shims_server.grpc_address is not None
    client = SeldonClient(gateway="istio", deployment_name="dep", namespace="ns", client_return_type="proto")
    over_grpc = client.predict(
        transport="grpc", gateway_endpoint=shims_server.grpc_address, data=np.array([[1.0]])
    )
    assert over_grpc.success and utils.get_data_from_proto(over_grpc.response).tolist() == [[2.0]]
    over_rest = client.predict(gateway_endpoint=shims_server.http_address, data=np.array([[1.0]]))
    assert not over_rest.success and over_rest.msg == "404:Not Found"
    prefixed = client.predict(
        gateway="ambassador",
        gateway_endpoint=shims_server.http_address,
        gateway_prefix="",
        data=np.array([[1.0, 1.0]]),
    )
    assert prefixed.success and list(prefixed.response.data.names) == ["low", "high"]


def test_seldon_client_refuses_what_it_does_not_provide(shims_server: RunningServer) -> None:
    client = SeldonClient(gateway="seldon", gateway_endpoint=shims_server.http_address)
    with pytest.raises(SeldonClientException, match="explain is not provided"):
        client.explain(data=np.array([[1.0]]))
    with pytest.raises(SeldonClientException, match="TLS"):
        SeldonClient(
            gateway_endpoint=shims_server.http_address, call_credentials=SeldonCallCredentials("t")
        ).predict()
    with pytest.raises(SeldonClientException, match="Valid values for gateway"):
        client.predict(gateway="nginx")
    with pytest.raises(SeldonClientException, match="cannot reach"):
        client.predict(gateway_endpoint="127.0.0.1:1")
    unreachable = client.predict(transport="grpc", gateway_endpoint="127.0.0.1:1")
    assert not unreachable.success and unreachable.response is None


def test_protobuf_responses_carry_tags_and_the_unit_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """What seldon-core's map fields cannot show here: tags and ``requestPath`` in protobuf answers."""
    monkeypatch.setenv("PREDICTIVE_UNIT_ID", "unit")
    monkeypatch.setenv("PREDICTIVE_UNIT_IMAGE", "repo/image:1.2")

    class Tagged:
        def tags(self) -> dict[str, Any]:
            return {"mine": 1}

    request = utils.json_to_seldon_message(
        {"data": {"ndarray": [[1]]}, "meta": {"puid": "q", "tags": {"in": "x"}}}
    )
    answer = utils.construct_response(
        Tagged(), False, request, np.array([[5]]), utils.get_meta_from_proto(request), None, {"rt": True}
    )
    assert utils.seldon_message_to_json(answer) == {
        "data": {"names": ["t:0"], "ndarray": [[5.0]]},
        "meta": {
            "puid": "q",
            "tags": {"in": "x", "mine": 1.0, "rt": True},
            "requestPath": {"unit": "repo/image:1.2"},
        },
    }


def test_tftensor_needs_no_tensorflow() -> None:
    array = np.array([[1.5, 2.5]], dtype=np.float32)
    datadef = utils.array_to_grpc_datadef("tftensor", array, ["a", "b"])
    back = utils.grpc_datadef_to_array(datadef)
    assert back.dtype == np.float32 and back.tolist() == [[1.5, 2.5]]
    rest = utils.array_to_rest_datadef("tftensor", array)
    assert rest["tftensor"]["dtype"] == "DT_FLOAT" and rest["names"] == []


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_seldon_client_calls_every_microservice_method(
    everything_server: RunningServer, transport: str
) -> None:
    endpoint = everything_server.http_address if transport == "rest" else everything_server.grpc_address
    client = SeldonClient(transport=transport, microservice_endpoint=endpoint)
    data = np.array([[1.0, 2.0]])
    answers = {
        method: client.microservice(method=method, data=data, payload_type="ndarray")
        for method in ("transform-input", "transform-output", "route")
    }
    assert all(answer.success for answer in answers.values()), answers
    values = {
        method: utils.get_data_from_proto(answer.response).tolist() for method, answer in answers.items()
    }
    assert values == {"transform-input": [[2.0, 4.0]], "transform-output": [[2.0, 3.0]], "route": [[1.0]]}
    combined = client.microservice(method="aggregate", datas=[data, data * 10], payload_type="tensor")
    assert type(combined).__name__ == "SeldonClientCombine" and combined.success, combined.msg
    assert utils.get_data_from_proto(combined.response).tolist() == [[11.0, 22.0]]
    assert len(combined.request.seldonMessages) == 2
