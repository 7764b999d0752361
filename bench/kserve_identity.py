"""The identity model of bench/payload_sweep.py as a ``kserve.Model`` under ``kserve.ModelServer``:
``predict`` returns the input tensor as the output, in binary form when the request asks for binary
outputs (``binary_data_output``, the REST binary extension), as KServe's own tritonclient-style
examples do. Runs in bench/.envs/kserve, where inferd is not installed; KServe's options come from
the command line, as for bench/kserve_app.py (per-request logs off there and here).
"""

from __future__ import annotations

import logging
from typing import Any

import kserve
from kserve import InferOutput, InferRequest, InferResponse
from kserve.utils.utils import generate_uuid

NAME, OUTPUT = "identity", "output-0"


class Identity(kserve.Model):
    def __init__(self) -> None:
        super().__init__(NAME)
        self.ready = True

    def predict(
        self, payload: InferRequest, headers: dict[str, str] | None = None, response_headers: Any = None
    ) -> InferResponse:
        array = payload.inputs[0].as_numpy()
        # Raw answers to what came over gRPC (as tritonclient expects them) or asked for binary outputs.
        binary = payload.from_grpc or bool((payload.parameters or {}).get("binary_data_output", False))
        output = InferOutput(OUTPUT, list(array.shape), "FP32")
        output.set_data_from_numpy(array, binary_data=binary)
        return InferResponse(payload.id or generate_uuid(), self.name, [output], use_binary_outputs=binary)


if __name__ == "__main__":
    server = kserve.ModelServer()  # configures KServe's logging
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    server.start([Identity()])
