"""KServe's V1 protocol on a model of another dialect (the bundled native iris model, which declares
its input and two outputs): the row and columnar forms, readiness, versions, errors; and the codec
against numpy and orjson (property tests)."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from inferd.core.types import InferenceResponse, ModelMetadata, TensorSpec
from inferd.protocols.v1.codec import decode, encode
from tests.servers import RunningServer

ROWS = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]


def test_v1_rows_and_columns_on_a_native_model(iris_server: RunningServer) -> None:
    with iris_server.http() as http:
        assert http.get("/v1/models/iris").json() == {"name": "iris", "ready": True}
        rows = http.post("/v1/models/iris:predict", json={"instances": ROWS}).json()["predictions"]
        assert [row["label"] for row in rows] == [0, 2] and len(rows[0]["probabilities"]) == 3
        named = http.post("/v1/models/iris:predict", json={"instances": [{"input-0": row} for row in ROWS]})
        assert named.json()["predictions"] == rows
        columns = http.post("/v1/models/iris:predict", json={"inputs": {"input-0": ROWS}}).json()
        assert columns["outputs"]["label"] == [0, 2]
        version = http.post("/v1/models/iris/versions/1:predict", json={"instances": ROWS})
        assert version.status_code == 404 and "no version '1'" in version.json()["error"]
        unknown = http.post("/v1/models/iris:predict", json={"inputs": {"x": ROWS}})
        assert unknown.status_code == 400 and "unknown input 'x'" in unknown.json()["error"]
        missing = http.get("/v1/models/nope")
        assert missing.status_code == 404 and "error" in missing.json()


SPEC = ModelMetadata("m", inputs=(TensorSpec("x", "FP64", (-1, -1)),))
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@given(
    st.integers(1, 5).flatmap(
        lambda width: st.lists(st.lists(finite, min_size=width, max_size=width), min_size=1)
    )
)
def test_instances_decode_as_numpy_reads_them(rows: list[list[float]]) -> None:
    body = json.dumps({"instances": rows}).encode()
    request, as_rows = decode(body, SPEC)
    assert as_rows
    np.testing.assert_array_equal(request.inputs["x"], np.array(json.loads(body)["instances"], np.float64))


@given(st.lists(st.lists(finite, min_size=2, max_size=2), min_size=1))
def test_predictions_encode_as_json_reads_them_back(rows: list[list[float]]) -> None:
    array = np.array(rows, np.float64)
    encoded = encode(InferenceResponse({"y": array}), rows=True)
    assert json.loads(json.dumps(encoded)) == {"predictions": array.tolist()}
