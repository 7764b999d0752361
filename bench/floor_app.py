"""The floor of bench/v2_iris.py: the least a Python server can do to answer a V2 iris request.

A bare Starlette app that does the same work per request as ``inferd serve examples/iris`` — parse
the V2 JSON body with orjson, turn ``data`` into a float32 array of ``shape``, run the example's own
``Iris.predict`` (the same code and the same ``model.joblib``, so the model work is identical by
construction, whatever the example does) and answer a V2 body with its outputs via orjson — and
nothing else: no validation, no metrics, no logging, no middleware. Run it in one process with

    uvicorn --app-dir bench floor_app:app --loop uvloop --http httptools --no-access-log
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "iris" / "model.py"
DATATYPES = {np.dtype(np.int64): "INT64", np.dtype(np.float32): "FP32", np.dtype(np.float64): "FP64"}


def _load_example() -> Any:
    spec = importlib.util.spec_from_file_location("iris_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.Iris()
    model.load()
    return model


MODEL = _load_example()


def _output(name: str, array: np.ndarray) -> dict[str, Any]:
    return {
        "name": name,
        "datatype": DATATYPES[array.dtype],
        "shape": list(array.shape),
        "data": array.ravel(),
    }


async def infer(request: Request) -> Response:
    tensor = orjson.loads(await request.body())["inputs"][0]
    features = np.asarray(tensor["data"], dtype=np.float32).reshape(tensor["shape"])
    outputs = MODEL.predict({tensor["name"]: features})
    body = {"model_name": "iris", "outputs": [_output(name, array) for name, array in outputs.items()]}
    return Response(orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY), media_type="application/json")


async def ready(request: Request) -> Response:
    return Response(status_code=200)


app = Starlette(
    routes=[
        Route("/v2/models/iris/infer", infer, methods=["POST"]),
        Route("/v2/health/ready", ready, methods=["GET"]),
    ]
)
