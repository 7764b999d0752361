"""A real ``inferd serve`` behind the gateway, answering V2 JSON."""

from __future__ import annotations

from inferd.platform.gateway import EndpointTable
from tests.platform.gateway.conftest import double_server, run_gateway  # noqa: F401
from tests.servers import RunningServer

REQUEST = {"inputs": [{"name": "x", "shape": [3], "datatype": "FP32", "data": [1, 2, 3.5]}]}


def test_v2_through_the_gateway(double_server: RunningServer) -> None:  # noqa: F811
    table = EndpointTable()
    table.set("double", [(double_server.http_address, 100)])
    (model,) = double_server.models
    with run_gateway(table) as gateway, gateway.http() as http:
        assert http.get("/e/double/v2/health/ready").status_code == 200
        answer = http.post(f"/e/double/v2/models/{model}/infer", json=REQUEST)
        assert answer.status_code == 200, answer.text
        assert answer.json()["outputs"][0]["data"] == [2, 4, 7]
        assert answer.headers["x-request-id"]  # inferd's own headers come back
        wrong = http.post(f"/e/double/v2/models/{model}/infer", json={"inputs": []})
        assert wrong.status_code == 400 and "error" in wrong.json()  # inferd's 4xx as it is
        missing = http.get("/e/double/v2/models/nope")
        assert missing.status_code == 404
    with run_gateway(table, endpoint="double") as gateway, gateway.http() as http:
        answer = http.post(f"/v2/models/{model}/infer", json=REQUEST)
        assert answer.status_code == 200 and answer.json()["outputs"][0]["data"] == [2, 4, 7]
