"""The graph on Seldon's gRPC ``seldon.protos.Seldon`` service, as the executor serves it: Predict,
SendFeedback and GraphMetadata (ModelMetadata answers for one node, by name)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from inferd.core.dataplane import DataPlane, ModelCall
from inferd.dialects.graph.errors import NodeError
from inferd.dialects.graph.metadata import graph_metadata
from inferd.dialects.graph.model import GraphModel, served_graph
from inferd.protocols.seldon._generated import prediction_pb2 as pb
from inferd.protocols.seldon._generated import prediction_pb2_grpc as pb_grpc
from inferd.protocols.seldon.grpc import Context, abort, called


def registrar(dataplane: DataPlane, name: str) -> Callable[[grpc.aio.Server], None]:
    servicer = GraphServicer(dataplane, name)
    return lambda server: pb_grpc.add_SeldonServicer_to_server(servicer, server)


class GraphServicer:
    def __init__(self, dataplane: DataPlane, name: str) -> None:
        self.dataplane, self.name = dataplane, name
        self.graph = functools.partial(served_graph, dataplane, name)

    async def _answer(
        self, method: Callable[[GraphModel, Any], Awaitable[Any]], request: Any, context: Context
    ) -> Any:
        """The graph's ``method`` (`GraphModel.answer` or `GraphModel.feedback`) of ``request``."""

        async def answer(call: ModelCall[GraphModel]) -> Any:
            graph, message = call.model, json_format.MessageToDict(request)
            document = await call.run(lambda: method(graph, message))
            return json_format.ParseDict(document, pb.SeldonMessage())

        return await called(self.dataplane, self.name, GraphModel, context, answer)

    async def Predict(self, request: Any, context: Context) -> Any:
        return await self._answer(GraphModel.answer, request, context)

    async def SendFeedback(self, request: Any, context: Context) -> Any:
        return await self._answer(GraphModel.feedback, request, context)

    async def GraphMetadata(self, request: Any, context: Context) -> Any:
        return await self._metadata(context, None, pb.SeldonGraphMetadata())

    async def ModelMetadata(self, request: Any, context: Context) -> Any:
        return await self._metadata(context, request.name, pb.SeldonModelMetadata())

    async def _metadata(self, context: Context, node: str | None, message: Message) -> Any:
        try:
            graph = self.graph()
            if node is None:
                document = await graph_metadata(graph)
            elif node in graph.nodes:
                document = await graph.nodes[node].metadata()
            else:
                raise NodeError(node, f"is not a node of graph '{self.name}'", 404)
            return json_format.ParseDict(document, message, ignore_unknown_fields=True)
        except Exception as exc:
            await abort(context, exc)
