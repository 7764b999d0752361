"""The nodes of a graph behind one interface: ``await node.call(method, message) -> message``, where
the method is a Seldon one (predict, transform_input, transform_output, route, aggregate,
send_feedback) and messages are SeldonMessage JSON values.

- `SeldonNode`: a Seldon component loaded here, answered by the Seldon dialect's own code (the same
  as ``inferd serve X --dialect seldon``), which it builds through the dialect registry
  (`BuildsSeldonComponents`).
- `ModelNode`: a model of any other dialect (a native `inferd.Model`, a Cortex API, ...): the
  message's data goes in as its one input tensor, its first output comes back as the message's data.
- `BuiltinNode`: Seldon's built-in RANDOM_ABTEST and SIMPLE_ROUTER routers and AVERAGE_COMBINER.
- `RestNode` and `GrpcNode`: a component served elsewhere, over Seldon's microservice REST API or its
  gRPC services.

`factories` resolves every node of a graph when the server starts (user classes are imported then,
so a bad target fails at once); each worker process builds its nodes from them.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import grpc
import httpx
import numpy as np
import orjson
from google.protobuf import json_format
from google.protobuf.empty_pb2 import Empty
from google.protobuf.message import Message

from inferd.core import tracing
from inferd.core.errors import ModelLoadError, TargetError
from inferd.core.importer import add_to_path, split_target
from inferd.core.model import Model, resolve
from inferd.core.settings import view
from inferd.core.types import DTYPES, InferenceRequest
from inferd.dialects import get_dialect, resolve_dialect
from inferd.dialects.base import BuildsSeldonComponents
from inferd.dialects.graph.errors import NodeError
from inferd.dialects.graph.settings import GraphSettings
from inferd.dialects.graph.spec import GraphSpec, NodeSpec
from inferd.protocols.seldon import methods, payload
from inferd.protocols.seldon._generated import prediction_pb2 as pb
from inferd.protocols.seldon._generated import prediction_pb2_grpc as pb_grpc
from inferd.protocols.seldon.component import Component
from inferd.protocols.seldon.errors import GRPC_CODES, SeldonError
from inferd.storage.cache import cache_of
from inferd.storage.errors import StorageError
from inferd.storage.locations import local_path
from inferd.storage.targets import local_target

#: The methods a model of another dialect answers: its predict, whatever the node does with it.
MODEL_METHODS = ("predict", "transform_input", "transform_output")
HTTP_STATUSES = {code: status for status, code in GRPC_CODES.items()} | {grpc.StatusCode.UNIMPLEMENTED: 400}
GRPC_PREFIX = "Exception calling application: "
JSON = {"Content-Type": "application/json"}
SERVICE_TYPES = ("MODEL", "ROUTER", "TRANSFORMER", "OUTPUT_TRANSFORMER", "COMBINER")


class Node(Protocol):
    """``call`` takes messages as `as_message` leaves them; a local Seldon node also takes and gives
    `payload.Decoded` ones (`Component.call_decoded`), which spares a decode and an encode between
    two of them."""

    name: str

    async def start(self) -> None:
        """Load the code, or make sure the remote node answers (a NodeError if it does not)."""

    async def call(self, method: str, message: Any) -> Any:
        """The node's answer to ``message``; a NodeError when it answers with an error."""

    async def metadata(self) -> Any:
        """The node's Seldon model metadata (``/metadata``)."""

    async def close(self) -> None: ...


NodeFactory = Callable[[], Node]


@dataclass(frozen=True)
class Timeouts:
    call: float
    startup: float


class SeldonNode:
    def __init__(self, spec: NodeSpec, model: Component) -> None:
        self.name, self.model = spec.name, model
        model.name = spec.name

    async def start(self) -> None:
        self.model.load()

    async def call(self, method: str, message: Any) -> Any:
        if self.model.passes_decoded(method):
            return await self.model.call_user(self.model.call_decoded, method, message)
        reply = await self.model.answer(method, as_message(message))
        if reply.status >= 400:  # a raw predict may answer with a status of its own
            raise NodeError.answered(self.name, reply.status, reply.body)
        return reply.body

    async def metadata(self) -> Any:
        return self.model.metadata_answer()

    async def close(self) -> None:
        await resolve(self.model.unload())


class ModelNode:
    """A V2-style model as a node: data in as its one input, its first output back as data."""

    def __init__(self, spec: NodeSpec, model: Model) -> None:
        self.name, self.model = spec.name, model
        model.name = spec.name

    async def start(self) -> None:
        await resolve(self.model.load())
        inputs = self.model.metadata().inputs
        self.input = inputs[0].name if inputs else "input-0"
        self.dtype = DTYPES[inputs[0].datatype] if inputs and inputs[0].datatype != "BYTES" else None

    async def call(self, method: str, message: Any) -> Any:
        if method not in MODEL_METHODS:  # feedback: a plain model learns nothing from it
            return {"meta": {}}
        decoded = payload.decode(message)
        features = np.asarray(decoded.features)
        if self.dtype is not None and features.dtype != self.dtype:
            features = features.astype(self.dtype)
        response = await self.model.infer(InferenceRequest({self.input: features}))
        result = as_text(np.asarray(next(iter(response.outputs.values()))))
        body = payload.encode(result, decoded.kind, None)
        meta = decoded.meta or {}
        body["meta"] = {key: meta[key] for key in ("puid", "tags", "requestPath") if meta.get(key)}
        return body

    async def metadata(self) -> Any:
        """The model's V2 metadata in Seldon's shape (its tensors are V2-style inputs and outputs)."""
        found = self.model.metadata()
        tensors = [
            [{"name": t.name, "datatype": t.datatype, "shape": list(t.shape)} for t in specs]
            for specs in (found.inputs, found.outputs)
        ]
        return {
            "name": found.name,
            "versions": list(found.versions),
            "platform": found.platform,
            "inputs": tensors[0],
            "outputs": tensors[1],
        }

    async def close(self) -> None:
        await resolve(self.model.unload())


def as_message(value: Any) -> Any:
    """A message (or a list of them, for aggregate) with any `payload.Decoded` one made a message."""
    if isinstance(value, payload.Decoded):
        return payload.as_message(value)
    if isinstance(value, list):
        return [payload.as_message(item) if isinstance(item, payload.Decoded) else item for item in value]
    return value


def as_text(array: np.ndarray) -> np.ndarray:
    """A BYTES array with its elements as text, so it can be JSON; other arrays as they are."""
    if array.dtype.kind not in "OS":
        return array
    texts: np.ndarray = np.vectorize(lambda v: v.decode() if isinstance(v, bytes) else v, otypes=[object])(
        array
    )
    return texts


class BuiltinNode:
    """Seldon's built-in units: RANDOM_ABTEST (child 0 with probability ``ratioA``, default 0.5,
    else child 1), SIMPLE_ROUTER (always child 0) and AVERAGE_COMBINER (the element-wise mean)."""

    def __init__(self, spec: NodeSpec) -> None:
        self.name, self.implementation = spec.name, spec.implementation
        self.ratio = float((spec.parameters or {}).get("ratioA", 0.5))

    async def start(self) -> None:
        return None

    async def call(self, method: str, message: Any) -> Any:
        if method == "route":
            chosen = 0 if self.implementation == "SIMPLE_ROUTER" or random.random() < self.ratio else 1
            return {"data": {"names": [], "ndarray": [[chosen]]}, "meta": {}}
        if method == "aggregate":
            decoded = [payload.decode(item) for item in message]
            try:
                mean = np.mean(np.stack([np.asarray(item.features, dtype=float) for item in decoded]), axis=0)
            except ValueError as exc:
                raise SeldonError(f"AVERAGE_COMBINER needs numbers of one shape: {exc}") from None
            return {**payload.encode(mean, decoded[0].kind, None), "meta": {}}
        return {"meta": {}}  # feedback

    async def metadata(self) -> Any:
        return {
            "name": self.implementation,
            "versions": [],
            "platform": "seldon",
            "inputs": [],
            "outputs": [],
        }

    async def close(self) -> None:
        return None


class RestNode:
    """A component on Seldon's microservice REST API: the message is POSTed as a JSON body."""

    def __init__(self, spec: NodeSpec, timeouts: Timeouts) -> None:
        assert spec.endpoint is not None
        self.name, self.address, self.timeouts = spec.name, spec.endpoint.address, timeouts

    async def start(self) -> None:
        self.client = httpx.AsyncClient(base_url=self.address, timeout=self.timeouts.call, trust_env=False)
        deadline = time.monotonic() + self.timeouts.startup
        while True:
            try:
                await self.client.get("/health/ping", timeout=min(self.timeouts.call, 2.0))
                return
            except httpx.TransportError as exc:
                if time.monotonic() >= deadline:
                    await self.client.aclose()
                    raise NodeError.unreachable(self.name, self.address, _why(exc)) from None
            await asyncio.sleep(0.1)

    async def call(self, method: str, message: Any) -> Any:
        if tracing.tracer is None:
            return await self._call(method, message, JSON)
        attributes = {"server.address": self.address, "inferd.node": self.name, "inferd.node.method": method}
        with tracing.tracer.client(f"POST {methods.PATHS[method]}", attributes) as trace_headers:
            return await self._call(method, message, {**JSON, **trace_headers})

    async def _call(self, method: str, message: Any, headers: dict[str, str]) -> Any:
        body = orjson.dumps(message, option=orjson.OPT_SERIALIZE_NUMPY)
        try:
            response = await self.client.post(methods.PATHS[method], content=body, headers=headers)
        except httpx.TimeoutException:
            raise NodeError.unreachable(
                self.name, self.address, f"no answer within {self.timeouts.call:g}s"
            ) from None
        except httpx.TransportError as exc:
            raise NodeError.unreachable(self.name, self.address, _why(exc)) from None
        try:
            answer = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            answer = response.text
        if response.status_code != 200:
            raise NodeError.answered(self.name, response.status_code, answer)
        if isinstance(answer, str):
            raise NodeError(self.name, f"answered something that is not JSON: {answer[:200]!r}")
        return answer

    async def metadata(self) -> Any:
        try:
            response = await self.client.get("/metadata")
        except httpx.TransportError as exc:
            raise NodeError.unreachable(self.name, self.address, _why(exc)) from None
        if response.status_code != 200:
            raise NodeError.answered(self.name, response.status_code, response.text)
        return response.json()

    async def close(self) -> None:
        await self.client.aclose()


def _why(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


class GrpcNode:
    """A component on Seldon's gRPC services: ``Model.Predict``, the rest through ``Generic``."""

    def __init__(self, spec: NodeSpec, timeouts: Timeouts) -> None:
        assert spec.endpoint is not None
        self.name, self.address, self.timeouts = spec.name, spec.endpoint.address, timeouts

    async def start(self) -> None:
        self.channel = grpc.aio.insecure_channel(self.address)
        generic = pb_grpc.GenericStub(self.channel)
        self.rpcs: dict[str, tuple[Any, type[Message]]] = {
            "predict": (pb_grpc.ModelStub(self.channel).Predict, pb.SeldonMessage),
            "transform_input": (generic.TransformInput, pb.SeldonMessage),
            "transform_output": (generic.TransformOutput, pb.SeldonMessage),
            "route": (generic.Route, pb.SeldonMessage),
            "aggregate": (generic.Aggregate, pb.SeldonMessageList),
            "send_feedback": (generic.SendFeedback, pb.Feedback),
        }
        try:
            await asyncio.wait_for(self.channel.channel_ready(), self.timeouts.startup or 0.5)
        except asyncio.TimeoutError:
            await self.channel.close()
            raise NodeError.unreachable(
                self.name, self.address, f"no gRPC connection within {self.timeouts.startup:g}s"
            ) from None

    async def call(self, method: str, message: Any) -> Any:
        if tracing.tracer is None:
            return await self._call(method, message, None)
        attributes = {"server.address": self.address, "inferd.node": self.name, "inferd.node.method": method}
        with tracing.tracer.client(f"grpc {method}", attributes) as trace_headers:
            return await self._call(method, message, tuple(trace_headers.items()))

    async def _call(self, method: str, message: Any, metadata: tuple[tuple[str, str], ...] | None) -> Any:
        rpc, kind = self.rpcs[method]
        document = {"seldonMessages": message} if method == "aggregate" else message
        try:
            request = json_format.ParseDict(document, kind())
        except (json_format.ParseError, TypeError, ValueError) as exc:
            raise NodeError(self.name, f"the message cannot go over gRPC: {exc}", 400) from None
        try:
            reply = await rpc(request, timeout=self.timeouts.call, metadata=metadata)
        except grpc.aio.AioRpcError as exc:
            raise self._failed(exc) from None
        return json_format.MessageToDict(reply)

    async def metadata(self) -> Any:
        try:
            reply = await pb_grpc.ModelStub(self.channel).Metadata(Empty(), timeout=self.timeouts.call)
        except grpc.aio.AioRpcError as exc:
            raise self._failed(exc) from None
        return json_format.MessageToDict(reply)

    def _failed(self, exc: grpc.aio.AioRpcError) -> NodeError:
        code, details = exc.code(), (exc.details() or "").removeprefix(GRPC_PREFIX)
        if code is grpc.StatusCode.UNAVAILABLE:
            return NodeError.unreachable(self.name, self.address, details)
        if code is grpc.StatusCode.DEADLINE_EXCEEDED:
            return NodeError.unreachable(self.name, self.address, f"no answer within {self.timeouts.call:g}s")
        not_implemented = code is grpc.StatusCode.UNIMPLEMENTED
        return NodeError(self.name, details, HTTP_STATUSES.get(code, 500), not_implemented=not_implemented)

    async def close(self) -> None:
        await self.channel.close()


# --- resolving a graph's nodes -------------------------------------------------------------------


def factories(
    graph: GraphSpec, settings: GraphSettings, hosted: Callable[[NodeSpec], NodeFactory] | None = None
) -> dict[str, NodeFactory]:
    """How to build each node of ``graph``, by name; a node whose code cannot be found is a
    TargetError naming it. ``hosted``, when given, builds the nodes whose code would run here (on
    Ray: a node behind its deployment's handle); built-in and remote nodes stay as they are."""
    add_to_path(graph.directory)
    return {spec.name: _named_factory(graph, spec, settings, hosted) for spec in graph.root.walk()}


def node_factory(graph: GraphSpec, name: str, settings: GraphSettings) -> NodeFactory:
    """How to build the one node ``name`` of ``graph`` here (a node's own process, on Ray)."""
    add_to_path(graph.directory)
    found = next((spec for spec in graph.root.walk() if spec.name == name), None)
    if found is None:
        raise TargetError(f"graph '{graph.name}' has no node '{name}'")
    return _named_factory(graph, found, settings, None)


def _named_factory(
    graph: GraphSpec,
    spec: NodeSpec,
    settings: GraphSettings,
    hosted: Callable[[NodeSpec], NodeFactory] | None,
) -> NodeFactory:
    timeouts = Timeouts(settings.graph_node_timeout, settings.graph_startup_timeout)
    try:
        return _factory(spec, graph.directory, settings, timeouts, hosted)
    except TargetError as exc:
        raise TargetError(f"graph '{graph.name}', node '{spec.name}': {exc.message}") from None
    except StorageError as exc:  # exit 1, like a node whose model fails to load
        raise ModelLoadError(f"graph '{graph.name}', node '{spec.name}': {exc.message}") from None


def _factory(
    spec: NodeSpec,
    directory: Path,
    settings: GraphSettings,
    timeouts: Timeouts,
    hosted: Callable[[NodeSpec], NodeFactory] | None,
) -> NodeFactory:
    if spec.endpoint is not None:
        remote = RestNode if spec.endpoint.protocol == "REST" else GrpcNode
        return lambda: remote(spec, timeouts)
    if spec.target is None:
        return lambda: BuiltinNode(spec)
    if hosted is not None:
        return hosted(spec)
    target = _relative_to(local_target(spec.target, cache_of(settings)), directory)
    dialect = resolve_dialect(spec.dialect, target) if spec.dialect == "auto" else get_dialect(spec.dialect)
    if dialect.name == "graph":
        raise TargetError("a node cannot be a graph file; serve that graph and give its endpoint")
    if isinstance(dialect, BuildsSeldonComponents):
        return _seldon_factory(dialect, spec, target, settings, directory)
    if spec.type not in ("MODEL", "TRANSFORMER", "OUTPUT_TRANSFORMER") or spec.routes or spec.combines:
        raise TargetError(f"a {dialect.name} model can be a MODEL or a transformer, not a {spec.type}")
    # the node's dialect gets what every dialect reads from the graph's settings, its own at defaults
    served = dialect.models(
        view(settings, dialect.settings_type).model_copy(update={"target": target, "name": None})
    )
    if len(served) != 1:
        raise TargetError(f"'{spec.target}' yields {len(served)} models; name one (path/model.py:Class)")
    return lambda: ModelNode(spec, served[0].factory())


def _seldon_factory(
    dialect: BuildsSeldonComponents, spec: NodeSpec, target: str, settings: GraphSettings, directory: Path
) -> NodeFactory:
    unit = (spec.name, spec.image or spec.target or "")
    service_type = spec.type if spec.type in SERVICE_TYPES else "MODEL"
    parameters = spec.parameters or {}
    if spec.model_uri is not None:  # a prepackaged server: Seldon gives it its model's folder
        parameters = {**parameters, "model_uri": _model_folder(spec.model_uri, directory, settings)}
    build = dialect.seldon_component(target, parameters, service_type, settings.predict_in_thread, unit)
    return lambda: SeldonNode(spec, build())


def _model_folder(uri: str, directory: Path, settings: GraphSettings) -> str:
    """A ``modelUri`` as a local folder: a path read from the graph file's folder, a URI in object
    storage fetched into the model cache (what Seldon's storage initializer does)."""
    local = local_path(uri)
    return str(directory / local) if local is not None else str(cache_of(settings).fetch(uri).path)


def _relative_to(target: str, directory: Path) -> str:
    """A target naming a file or folder, read from the graph file's folder; other targets as given."""
    module, attr = split_target(target)
    path = Path(module)
    if path.is_absolute() or not (module.endswith(".py") or "/" in module or (directory / path).exists()):
        return target
    return str(directory / path) + (f":{attr}" if attr else "")
