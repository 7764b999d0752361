"""The identity model of bench/payload_sweep.py as an MLServer 1.7 custom runtime: the input tensor,
decoded with MLServer's own ``NumpyCodec`` and encoded back as the output (MLServer's way of writing
a runtime; it answers gRPC requests sent with ``raw_input_contents`` in ``raw_output_contents``).
Runs in bench/.envs/mlserver, where inferd is not installed.
"""

from __future__ import annotations

from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse

OUTPUT = "output-0"


class Identity(MLModel):
    async def load(self) -> bool:
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        array = NumpyCodec.decode_input(payload.inputs[0])
        return InferenceResponse(
            model_name=self.name, id=payload.id, outputs=[NumpyCodec.encode_output(OUTPUT, array)]
        )
