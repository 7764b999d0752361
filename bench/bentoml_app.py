"""The BentoML peer of bench/all.py: the iris model as a ``@bentoml.service`` whose api, routed at
V2's infer path, takes the V2 JSON body (its ``inputs`` field becomes the api's ``inputs``
argument, validated by pydantic) and answers a V2 body.

    bentoml serve bentoml_app:Iris --working-dir bench --host 127.0.0.1 --port PORT

The service runs in BentoML's default configuration (one worker process under its supervisor), the
api is a plain method (BentoML runs it in its thread pool), and per-request access logs are off, as
they are in inferd.
"""

from __future__ import annotations

from typing import Any

import bentoml
import peer_iris
from pydantic import BaseModel


class Tensor(BaseModel):
    """One V2 input tensor."""

    name: str
    shape: list[int]
    datatype: str
    data: list[Any]


@bentoml.service(logging={"access": {"enabled": False}})
class Iris:
    def __init__(self) -> None:
        self.classifier = peer_iris.load()

    @bentoml.api(route="/v2/models/iris/infer")
    def infer(self, inputs: list[Tensor]) -> dict[str, Any]:
        rows = peer_iris.features(inputs[0].shape, inputs[0].data)
        return peer_iris.v2_response(peer_iris.predict(self.classifier, rows))
