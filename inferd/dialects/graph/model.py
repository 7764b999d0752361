"""A graph as one served model: its nodes are built and started when it loads (in each worker), and
it answers Seldon messages (the executor's external API) and V2 requests (its one input as an
``ndarray`` message, the answer's data as ``output-0``)."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from inferd.core.dataplane import DataPlane
from inferd.core.model import Model
from inferd.core.types import Tensors
from inferd.dialects.graph.errors import NodeError
from inferd.dialects.graph.executor import Executor, Step
from inferd.dialects.graph.nodes import Node, NodeFactory, as_text
from inferd.dialects.graph.spec import GraphSpec
from inferd.protocols.seldon import payload


class GraphModel(Model):
    platform: ClassVar[str] = "seldon-graph"

    def __init__(self, spec: GraphSpec, factories: dict[str, NodeFactory]) -> None:
        self.spec, self.factories = spec, factories
        self.nodes: dict[str, Node] = {}

    async def load(self) -> None:
        """Build every node and start them side by side; one that fails stops the others again."""
        nodes = {name: build() for name, build in self.factories.items()}
        results = await asyncio.gather(*(_start(node) for node in nodes.values()), return_exceptions=True)
        failures = [result for result in results if isinstance(result, BaseException)]
        if failures:
            started = [node for node, result in zip(nodes.values(), results, strict=True) if result is None]
            await asyncio.gather(*(node.close() for node in started), return_exceptions=True)
            raise failures[0]
        self.nodes = nodes
        self.executor = Executor(Step(self.spec.root, nodes, self.name))

    async def unload(self) -> None:
        nodes, self.nodes = self.nodes, {}
        await asyncio.gather(*(node.close() for node in nodes.values()), return_exceptions=True)

    async def answer(self, message: Any) -> Any:
        return await self.executor.predict(message)

    async def feedback(self, feedback: Any) -> Any:
        return await self.executor.feedback(feedback)

    async def predict(self, inputs: Tensors) -> Tensors:
        array = as_text(next(iter(inputs.values())))
        try:
            body = await self.executor.predict({"data": {"ndarray": array.tolist()}})
        except NodeError as exc:
            raise exc.as_inferd_error() from exc
        return {payload.OUTPUT: payload.as_output(body)}


def served_graph(dataplane: DataPlane, name: str) -> GraphModel:
    """The graph served as ``name``, ready (else ModelNotReady)."""
    model = dataplane.registry.get(name)
    assert isinstance(model, GraphModel)
    return model


async def _start(node: Node) -> None:
    try:
        await node.start()
    except Exception as exc:
        raise NodeError.of(node.name, exc) from exc
