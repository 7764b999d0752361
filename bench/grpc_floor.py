"""The gRPC floor of bench/grpc_load.py: what a user would write by hand with grpc.aio on uvloop, one
process, no interceptors. ``ModelInfer`` takes the FP32 rows from ``raw_input_contents`` with
``numpy.frombuffer``, does the iris model's work (bench/peer_iris.py: ``predict_proba``, the label
its argmax: the same as ``examples/iris/model.py``) and answers both outputs in
``raw_output_contents``; nothing else. It bounds what inferd's gRPC can reach on this machine: the
req/s of grpc.aio itself plus the model.

    .venv/bin/python bench/grpc_floor.py HTTP_PORT GRPC_PORT

HTTP_PORT answers 200 to anything once gRPC serves: the benches' readiness wait (bench/v2_iris.py
``serving``) asks over HTTP.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import grpc
import numpy as np
import peer_iris
import uvloop

from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb
from inferd.protocols.v2._generated import grpc_predict_v2_pb2_grpc as pb_grpc

HOST = "127.0.0.1"
READY_ANSWER = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class Servicer(pb_grpc.GRPCInferenceServiceServicer):  # type: ignore[misc]
    def __init__(self) -> None:
        self.classifier = peer_iris.load()

    async def ModelInfer(self, request: pb.ModelInferRequest, context: Any) -> pb.ModelInferResponse:
        rows = np.frombuffer(request.raw_input_contents[0], dtype="<f4").reshape(request.inputs[0].shape)
        answer = pb.ModelInferResponse(model_name=request.model_name, id=request.id)
        for name, array in peer_iris.predict(self.classifier, rows).items():
            answer.outputs.add(name=name, datatype=peer_iris.DATATYPES[array.dtype], shape=array.shape)
            answer.raw_output_contents.append(array.tobytes())
        return answer


async def ready(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(READY_ANSWER)
    await writer.drain()
    writer.close()


async def main(http_port: int, grpc_port: int) -> None:
    server = grpc.aio.server()
    pb_grpc.add_GRPCInferenceServiceServicer_to_server(Servicer(), server)
    server.add_insecure_port(f"{HOST}:{grpc_port}")
    await server.start()
    http = await asyncio.start_server(ready, HOST, http_port)
    async with http:
        await server.wait_for_termination()


if __name__ == "__main__":
    uvloop.run(main(int(sys.argv[1]), int(sys.argv[2])))
