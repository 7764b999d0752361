"""Seldon's gRPC API (spec §10): one servicer registered under the seven services of ``seldon.protos``.

Each call turns the message into proto-JSON (so numbers arrive as doubles, as Seldon's own proto path
makes them), answers it through `SeldonModel.call` like REST does, and turns the answer back into the
message. Errors get a real status code and keep their message (Seldon sent UNKNOWN and nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf import json_format

from inferd.core.dataplane import DataPlane, ModelCall
from inferd.core.errors import ModelNotReady
from inferd.dialects.seldon.component import SeldonModel
from inferd.protocols.seldon._generated import prediction_pb2 as pb
from inferd.protocols.seldon._generated import prediction_pb2_grpc as pb_grpc
from inferd.protocols.seldon.grpc import Context, abort, called

SERVICES = (
    pb_grpc.add_GenericServicer_to_server,
    pb_grpc.add_ModelServicer_to_server,
    pb_grpc.add_RouterServicer_to_server,
    pb_grpc.add_TransformerServicer_to_server,
    pb_grpc.add_OutputTransformerServicer_to_server,
    pb_grpc.add_CombinerServicer_to_server,
    pb_grpc.add_SeldonServicer_to_server,
)


def registrar(dataplane: DataPlane, name: str) -> Callable[[grpc.aio.Server], None]:
    servicer = SeldonServicer(dataplane, name)

    def add(server: grpc.aio.Server) -> None:
        for add_service in SERVICES:
            add_service(servicer, server)

    return add


class SeldonServicer:
    def __init__(self, dataplane: DataPlane, name: str) -> None:
        self.dataplane, self.name = dataplane, name

    def component(self) -> SeldonModel:
        if not self.dataplane.model_ready(self.name):
            raise ModelNotReady(f"model '{self.name}' is not ready")
        model = self.dataplane.registry.get(self.name)
        assert isinstance(model, SeldonModel)
        return model

    async def _answer(self, method: str, request: Any, context: Context) -> Any:
        async def answer(call: ModelCall[SeldonModel]) -> Any:
            model, message = call.model, json_format.MessageToDict(request)
            if method == "aggregate":  # protobuf drops an empty list: it is still a list
                message.setdefault("seldonMessages", [])
            reply = await call.run(lambda: model.answer(method, message, request, "grpc"))
            return json_format.ParseDict(reply.body, pb.SeldonMessage())

        return await called(self.dataplane, self.name, SeldonModel, context, answer)

    async def _metadata(self, context: Context) -> dict[str, Any]:
        try:
            return self.component().metadata_answer()
        except Exception as exc:
            await abort(context, exc)
            raise  # unreachable: abort raises

    async def Predict(self, request: Any, context: Context) -> Any:
        return await self._answer("predict", request, context)

    async def TransformInput(self, request: Any, context: Context) -> Any:
        return await self._answer("transform_input", request, context)

    async def TransformOutput(self, request: Any, context: Context) -> Any:
        return await self._answer("transform_output", request, context)

    async def Route(self, request: Any, context: Context) -> Any:
        return await self._answer("route", request, context)

    async def Aggregate(self, request: Any, context: Context) -> Any:
        return await self._answer("aggregate", request, context)

    async def SendFeedback(self, request: Any, context: Context) -> Any:
        return await self._answer("send_feedback", request, context)

    async def Metadata(self, request: Any, context: Context) -> Any:
        return json_format.ParseDict(await self._metadata(context), pb.SeldonModelMetadata())

    async def ModelMetadata(self, request: Any, context: Context) -> Any:
        return await self.Metadata(request, context)

    async def GraphMetadata(self, request: Any, context: Context) -> Any:
        """A single unit as a one-node graph (§10.1)."""
        document = await self._metadata(context)
        unit = self.component().unit_id or document["name"] or self.name
        graph = {
            "name": document["name"],
            "models": {unit: document},
            "inputs": document["inputs"],
            "outputs": document["outputs"],
        }
        return json_format.ParseDict(graph, pb.SeldonGraphMetadata())
