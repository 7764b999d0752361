"""The KServe peer of bench/all.py: the iris model as a ``kserve.Model`` subclass under
``kserve.ModelServer`` (KServe's custom-model way: its sklearn server is not published on PyPI),
served over V2 REST at ``/v2/models/iris/infer``.

    bench/.envs/kserve/bin/python bench/kserve_app.py --http_port PORT --grpc_port PORT
                                                      --enable_latency_logging false

KServe's own options (kserve.model_server's parser) are taken from the command line; in its default
configuration (one uvicorn worker, gRPC on) except that per-request logs are off (the latency line
by that option, the uvicorn access log here), as they are in inferd.
"""

from __future__ import annotations

import logging
from typing import Any

import kserve
import peer_iris
from kserve import InferOutput, InferRequest, InferResponse
from kserve.utils.utils import generate_uuid


class Iris(kserve.Model):
    def __init__(self) -> None:
        super().__init__(peer_iris.NAME)
        self.load()

    def load(self) -> bool:
        self.classifier = peer_iris.load()
        self.ready = True
        return self.ready

    def predict(
        self, payload: InferRequest, headers: dict[str, str] | None = None, response_headers: Any = None
    ) -> InferResponse:
        outputs = peer_iris.predict(self.classifier, payload.inputs[0].as_numpy())
        tensors = []
        for name, array in outputs.items():
            tensor = InferOutput(name, list(array.shape), peer_iris.DATATYPES[array.dtype])
            tensor.set_data_from_numpy(array, binary_data=False)
            tensors.append(tensor)
        return InferResponse(payload.id or generate_uuid(), self.name, tensors)


if __name__ == "__main__":
    server = kserve.ModelServer()  # configures KServe's logging
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    server.start([Iris()])
