"""The graph's metadata (spec §10.1): every node's model metadata under its name, the graph's
inputs from the node a request enters first and its outputs from the node it leaves last."""

from __future__ import annotations

import asyncio
from typing import Any

from inferd.dialects.graph.errors import NodeError
from inferd.dialects.graph.model import GraphModel
from inferd.dialects.graph.spec import NodeSpec


async def graph_metadata(graph: GraphModel) -> dict[str, Any]:
    names = list(graph.nodes)
    documents = await asyncio.gather(*(_metadata(graph, name) for name in names))
    models = dict(zip(names, documents, strict=True))
    root = graph.spec.root
    return {
        "name": graph.name,
        "models": models,
        "inputs": models[root.name].get("inputs", []),
        "outputs": models[_last(root).name].get("outputs", []),
    }


async def _metadata(graph: GraphModel, name: str) -> Any:
    try:
        return await graph.nodes[name].metadata()
    except Exception as exc:
        raise NodeError.of(name, exc) from exc


def _last(node: NodeSpec) -> NodeSpec:
    """The node an answer leaves through: the node itself when it transforms the output or has no
    children, else (following the first child) the last node below it."""
    if node.transforms_output or node.combines or not node.children:
        return node
    return _last(node.children[0])
