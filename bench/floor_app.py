"""The floor of bench/v2_iris.py: the least a Python server can do to answer a V2 iris request.

A bare Starlette app that does the same work per request as ``inferd serve examples/iris`` — parse
the V2 JSON body with orjson, turn ``data`` into a float32 array of ``shape``, run the example's
``Iris.predict`` work on the same fitted ``model.joblib`` (``peer_iris.predict``: one
``predict_proba`` pass, the label its argmax) and answer a V2 body with its outputs via orjson — and
nothing else: no validation, no metrics, no logging, no middleware.

It never imports inferd (``examples/iris/model.py`` does, to subclass ``inferd.Model``): the floor
is what a hand-written server costs, so inferd's own imports must not be counted in it (issue 26);
``bench/memory.py`` checks that ``inferd`` is absent from its ``sys.modules``. Run it in one process
with

    uvicorn --app-dir bench floor_app:app --loop uvloop --http httptools --no-access-log
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import peer_iris  # bench/, on the path by uvicorn's --app-dir; numpy and scikit-learn only
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

DATATYPES = {np.dtype(np.int64): "INT64", np.dtype(np.float32): "FP32", np.dtype(np.float64): "FP64"}


CLASSIFIER = peer_iris.load()


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
    outputs = peer_iris.predict(CLASSIFIER, features)
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
