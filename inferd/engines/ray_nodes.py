"""An inference graph's nodes on Ray Serve: each node whose code inferd loads runs in a deployment of
its own (`NodeReplica`, with its own replicas and CPUs), and the graph's ingress runs the graph
dialect's executor over `HandleNode`s, which call those deployments through Ray Serve deployment
handles (``handle.call.remote(method, message)``) with Seldon messages as plain data, not HTTP.
Built-in units (routers, the combiner) run in the ingress, as in Seldon's executor, and remote nodes
(``endpoint``) stay REST or gRPC calls.

Ray is imported inside the functions that run in Ray's processes, so importing this module does not
need it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from inferd.config.settings import Settings
from inferd.core.importer import add_to_path
from inferd.dialects.graph import spec
from inferd.dialects.graph.errors import NodeError
from inferd.dialects.graph.loader import GraphDialect
from inferd.dialects.graph.nodes import Node, NodeFactory, as_message, factories, node_factory
from inferd.dialects.graph.settings import GraphSettings
from inferd.server.logging import configure_logging, log_format

#: Node deployments are named after their node, apart from the ingress (``inferd``).
NODE_PREFIX = "node-"
GRAPH = "graph"


def deployment_name(node: str) -> str:
    """The Ray Serve deployment of ``node`` ('#' separates Ray's replica ids, so it cannot appear)."""
    return NODE_PREFIX + node.replace("#", "-")


def replica_settings(fields: dict[str, Any], workdir: str | None) -> Settings:
    """The settings inside a replica, with its logging set up; the replica works in ``workdir`` (the
    command's) when its machine has that folder (the local Ray, a cluster on this machine), so module
    targets and relative paths resolve as without Ray; elsewhere it stays where Ray put it."""
    if workdir is not None and Path(workdir).is_dir():
        os.chdir(workdir)
        add_to_path(Path(workdir))
    settings = Settings(**fields)
    configure_logging(settings.log_level, log_format(settings))
    return settings


def graph_of(settings: Settings, workdir: str | None = None) -> spec.GraphSpec | None:
    """The graph the settings serve (its file read from ``workdir``), or None when they serve none."""
    if settings.dialect not in ("auto", GRAPH) or not settings.target:
        return None
    path = Path(workdir or ".", settings.target)
    if settings.dialect == "auto" and not GraphDialect().detect(str(path)):
        return None
    return spec.load(path)


def node_settings(settings: Settings, scale: spec.Scale) -> Settings:
    """The server's settings with a node's own ``replicas``, ``autoscale`` and ``num_cpus``: what
    its deployment is made with (fixed replicas replace the server's autoscaling)."""
    update: dict[str, Any] = {}
    if scale.replicas is not None:
        update |= {"replicas": scale.replicas, "autoscale": None}
    if scale.autoscale is not None:
        update["autoscale"] = scale.autoscale
    if scale.num_cpus is not None:
        update["ray_num_cpus"] = scale.num_cpus
    return settings.model_copy(update=update)


class NodeReplica:
    """One replica of a node's deployment: the node, built and started as the local graph server
    builds it. Answers are plain data, ``{"answer": message}`` or ``{"error": NodeError.as_data()}``,
    so nothing but JSON-able values and numbers cross between Ray's processes."""

    async def __init__(self, fields: dict[str, Any], node: str, workdir: str | None) -> None:  # type: ignore[misc]  # Ray Serve awaits it
        settings = replica_settings(fields, workdir)
        graph = spec.load(Path(settings.target))
        self.name = node
        self.node: Node = node_factory(graph, node, settings)()
        await self.node.start()

    async def call(self, method: str, message: Any) -> dict[str, Any]:
        return await self._reply(self.node.call(method, message))

    async def metadata(self) -> dict[str, Any]:
        return await self._reply(self.node.metadata())

    async def _reply(self, answer: Awaitable[Any]) -> dict[str, Any]:
        try:
            return {"answer": as_message(await answer)}
        except Exception as exc:
            return {"error": NodeError.of(self.name, exc).as_data()}

    async def __del__(self) -> None:
        """Ray Serve's shutdown hook: the node's ``unload`` (none when it never started)."""
        node = self.__dict__.pop("node", None)
        if node is not None:
            await node.close()


class HandleNode:
    """A node behind its Ray Serve deployment, called through a deployment handle; a call that takes
    longer than ``graph_node_timeout``, or whose replica died, is the node's 503."""

    def __init__(self, node: spec.NodeSpec, timeout: float) -> None:
        self.name, self.deployment, self.timeout = node.name, deployment_name(node.name), timeout

    async def start(self) -> None:
        from ray import serve

        app = serve.get_replica_context().app_name
        self.handle = serve.get_deployment_handle(self.deployment, app_name=app)

    async def call(self, method: str, message: Any) -> Any:
        return await self._remote("call", method, message)

    async def metadata(self) -> Any:
        return await self._remote("metadata")

    async def _remote(self, method: str, *args: Any) -> Any:
        from ray.exceptions import RayError
        from ray.serve.exceptions import RayServeException

        response = getattr(self.handle, method).remote(*args)
        where = f"Ray Serve deployment '{self.deployment}'"
        try:
            reply = await asyncio.wait_for(response, self.timeout)
        except asyncio.TimeoutError:
            response.cancel()
            raise NodeError.unreachable(self.name, where, f"no answer within {self.timeout:g}s") from None
        except (RayError, RayServeException) as exc:
            raise NodeError.unreachable(self.name, where, type(exc).__name__) from None
        if "error" in reply:
            raise NodeError.from_data(reply["error"])
        return reply["answer"]

    async def close(self) -> None:
        return None


class HandleGraphDialect(GraphDialect):
    """The graph dialect of the graph's ingress: the same routes, model and executor, with the
    nodes whose code inferd loads behind their deployments' handles."""

    def node_factories(self, graph: spec.GraphSpec, settings: GraphSettings) -> dict[str, NodeFactory]:
        timeout = settings.graph_node_timeout
        return factories(graph, settings, lambda node: lambda: HandleNode(node, timeout))
