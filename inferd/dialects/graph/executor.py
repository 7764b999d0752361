"""Seldon's executor semantics over a tree of nodes (``shared/specs/seldon.md`` §11).

Predict, per node, recursively: the input call (a MODEL's ``predict``, a TRANSFORMER's
``transform_input``); then, when it has children, the route (a ROUTER's answer, else -1): -1 runs
every child in parallel on the same message, -2 stops there and keeps the message, N runs child N;
then a COMBINER's ``aggregate`` over the children's answers, else the first child's answer; last the
output call (an OUTPUT_TRANSFORMER's ``transform_output``) on the way back.

Every routing decision is recorded by node name and returned in ``meta.routing`` of the answer, and
every node that answered adds itself to ``meta.requestPath``. Feedback follows the routing recorded
in ``response.meta.routing`` back down the tree and reaches every MODEL and ROUTER on its way.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from inferd.core.metrics import Observer
from inferd.dialects.graph.errors import NodeError
from inferd.dialects.graph.metrics import node_latency
from inferd.dialects.graph.nodes import Node, SeldonNode, as_message
from inferd.dialects.graph.spec import NodeSpec
from inferd.protocols.seldon.payload import Decoded

ALL, STOP = -1, -2
Routing = dict[str, int]


class Step:
    """One node of the tree with what the executor does there, worked out once."""

    def __init__(self, spec: NodeSpec, nodes: dict[str, Node], graph: str) -> None:
        self.name, self.node = spec.name, nodes[spec.name]
        self.input_method = spec.input_method
        self.routes, self.combines = spec.routes, spec.combines
        self.transforms_output, self.takes_feedback = spec.transforms_output, spec.takes_feedback
        self.image = spec.image or spec.target or (spec.endpoint.address if spec.endpoint else "")
        self.children = [Step(child, nodes, graph) for child in spec.children]
        self.graph = graph
        #: Whether the node takes `Decoded` messages; every other node gets them as messages.
        self.takes_decoded = isinstance(self.node, SeldonNode)
        #: Latency series by method, made on first use so /metrics lists only the calls a node gets.
        self.timers: dict[str, Observer] = {}

    async def call(self, method: str, message: Any) -> Any:
        timer = self.timers.get(method)
        if timer is None:
            timer = self.timers[method] = node_latency(self.graph, self.name, method)
        if not self.takes_decoded:
            message = as_message(message)
        started = time.perf_counter()
        try:
            return await self.node.call(method, message)
        except Exception as exc:
            raise NodeError.of(self.name, exc) from exc
        finally:
            timer.observe(time.perf_counter() - started)


class Executor:
    def __init__(self, root: Step) -> None:
        self.root = root

    async def predict(self, message: Any) -> Any:
        """The graph's answer to ``message``, with ``meta.routing`` and ``meta.requestPath`` filled."""
        routing: Routing = {}
        answer = as_message(await self._predict(self.root, message, routing))
        if isinstance(answer, dict):
            answer = {**answer, "meta": {**(answer.get("meta") or {}), "routing": routing}}
        return answer

    async def _predict(self, step: Step, message: Any, routing: Routing) -> Any:
        if step.input_method is not None:
            message = _visited(step, await step.call(step.input_method, message))
            routing[step.name] = ALL
        if step.children:
            message = await self._children(step, message, routing)
        if step.transforms_output:
            message = _visited(step, await step.call("transform_output", message))
        return message

    async def _children(self, step: Step, message: Any, routing: Routing) -> Any:
        route = await self._route(step, message) if step.routes else ALL
        routing[step.name] = route
        if route == STOP:
            return message
        if route == ALL and len(step.children) > 1:
            answers = await _all(self._predict(child, message, routing) for child in step.children)
        elif route == ALL:
            answers = [await self._predict(step.children[0], message, routing)]
        else:
            answers = [await self._predict(step.children[route], message, routing)]
        if not step.combines:
            return answers[0]
        return _visited(step, await step.call("aggregate", as_message(answers)))

    async def _route(self, step: Step, message: Any) -> int:
        answer = await step.call("route", message)
        route = route_of(answer)
        if route is None or not STOP <= route < len(step.children):
            raise NodeError(
                step.name,
                f"routed to {route if route is not None else _short(answer)}, but it has "
                f"{len(step.children)} children (-1 is all of them, -2 none)",
            )
        return route

    async def feedback(self, feedback: Any) -> Any:
        """Send ``feedback`` to the nodes its response went through; the answer is the root's (or,
        when the root takes no feedback, its first child's)."""
        if not isinstance(feedback, dict):
            raise NodeError(self.root.name, "feedback must be a JSON object", 400)
        routing = ((feedback.get("response") or {}).get("meta") or {}).get("routing") or {}
        if not isinstance(routing, dict):
            raise NodeError(self.root.name, "response.meta.routing must be an object", 400)
        answer = await self._feedback(self.root, feedback, routing)
        return answer if answer is not None else {"meta": {}}

    async def _feedback(self, step: Step, feedback: Any, routing: dict[str, Any]) -> Any:
        answer = None
        if step.children:
            route = routing.get(step.name, ALL)
            if isinstance(route, float) and route.is_integer():  # routing that went through protobuf
                route = int(route)
            if not isinstance(route, int) or not STOP <= route < len(step.children):
                raise NodeError(step.name, f"feedback routing {route!r} names no child of it", 400)
            if route == ALL:
                answers = await _all(self._feedback(child, feedback, routing) for child in step.children)
                answer = answers[0]
            elif route != STOP:
                answer = await self._feedback(step.children[route], feedback, routing)
        if step.takes_feedback:
            return await step.call("send_feedback", feedback)
        return answer


async def _all(calls: Any) -> list[Any]:
    """Run ``calls`` side by side; the first failure, in child order, fails them all (as Seldon)."""
    pending = list(calls)
    if len(pending) == 1:
        return [await pending[0]]
    answers = await asyncio.gather(*pending, return_exceptions=True)
    for answer in answers:
        if isinstance(answer, BaseException):
            raise answer
    return answers


def _visited(step: Step, message: Any) -> Any:
    """``message`` with the node in ``meta.requestPath``: a Seldon component adds itself, a remote or
    other node may not. The message is copied, never changed: siblings may share it."""
    if isinstance(message, Decoded):  # only local Seldon nodes answer these, and they add themselves
        return message
    if not isinstance(message, dict):
        return message
    meta = message.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    path = meta.get("requestPath")
    path = path if isinstance(path, dict) else {}
    if step.name in path:
        return message
    return {**message, "meta": {**meta, "requestPath": {**path, step.name: step.image}}}


def route_of(answer: Any) -> int | None:
    """The route in a router's answer: the first element of its data (``[[n]]``, ``[n]``, tensor
    values) or of a bare JSON list; None when there is none."""
    if isinstance(answer, dict):
        data = answer.get("data")
        if not isinstance(data, dict):
            return None
        tensor = data.get("tensor")
        answer = tensor.get("values") if isinstance(tensor, dict) else data.get("ndarray")
    while isinstance(answer, Sequence) and not isinstance(answer, str) and answer:
        answer = answer[0]
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) or answer != int(answer):
        return None
    return int(answer)


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 200 else text[:200] + "..."
