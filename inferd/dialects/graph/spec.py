"""A graph file → a validated tree of `NodeSpec`s, or a TargetError saying what is wrong and where.

Three shapes are read (YAML or JSON, told apart by content):

- a whole ``SeldonDeployment`` (its first predictor's ``graph``; the predictor names the graph);
- inferd's short form, ``{name, graph: <node>}``, where the node is a SeldonDeployment ``graph``
  section as it is, nested ``children`` and all;
- the flat short form, ``{name, root, nodes: {node name: node}}``, where ``children`` name other
  nodes. Both short forms may mix: a child given as a string names an entry of ``nodes``.

A node is Seldon's PredictiveUnit (``name``, ``type``, ``methods``, ``children``, ``endpoint``,
``parameters``, ``implementation``) plus inferd's ``target`` and ``dialect``, which name the code to
load in this process. Graphs are trees: a cycle, a node used twice, an unknown type or a router or
combiner without children is refused here, before anything is loaded.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from inferd.core.errors import TargetError
from inferd.protocols.seldon import prepackaged
from inferd.protocols.seldon.parameters import parse_parameters

SUFFIXES = (".yaml", ".yml", ".json")
TYPES = ("MODEL", "TRANSFORMER", "OUTPUT_TRANSFORMER", "ROUTER", "COMBINER", "UNKNOWN_TYPE")
METHODS = ("TRANSFORM_INPUT", "TRANSFORM_OUTPUT", "ROUTE", "AGGREGATE", "SEND_FEEDBACK")
#: Built-in implementations inferd runs itself, and the type each one implies.
BUILTINS = {"RANDOM_ABTEST": "ROUTER", "SIMPLE_ROUTER": "ROUTER", "AVERAGE_COMBINER": "COMBINER"}
ROUTING_BUILTINS = ("RANDOM_ABTEST", "SIMPLE_ROUTER")
#: Keys of a node: Seldon's PredictiveUnit fields, then inferd's.
SELDON_KEYS = frozenset(
    {
        "name",
        "type",
        "methods",
        "children",
        "endpoint",
        "parameters",
        "implementation",
        "modelUri",
        "logger",
        "envSecretRefName",
        "storageInitializerImage",
        "serviceAccountName",
    }
)
#: inferd's keys of a node's Ray Serve deployment (``--engine ray``); the server's settings otherwise.
SCALE_KEYS = frozenset({"replicas", "autoscale", "num_cpus"})
NODE_KEYS = SELDON_KEYS | {"target", "dialect", "image"} | SCALE_KEYS
Protocol = Literal["REST", "GRPC"]


@dataclass(frozen=True)
class Endpoint:
    """A node served by another process (another ``inferd serve X --dialect seldon``, say)."""

    host: str
    port: int
    protocol: Protocol

    @property
    def address(self) -> str:
        return f"http://{self.host}:{self.port}" if self.protocol == "REST" else f"{self.host}:{self.port}"


@dataclass(frozen=True)
class Scale:
    """A node's own deployment on Ray Serve; what is None is the server's (``--replicas``, ...)."""

    replicas: int | None = None
    autoscale: str | None = None
    num_cpus: float | None = None


@dataclass(frozen=True)
class NodeSpec:
    name: str
    type: str
    methods: frozenset[str] = frozenset()
    children: tuple[NodeSpec, ...] = ()
    target: str | None = None
    dialect: str = "auto"
    endpoint: Endpoint | None = None
    implementation: str | None = None
    parameters: dict[str, Any] | None = None
    image: str = ""
    scale: Scale = Scale()
    #: A prepackaged server's ``modelUri``: fetched where the node runs, given as its ``model_uri``.
    model_uri: str | None = None

    @property
    def runs_code(self) -> bool:
        """Whether inferd loads the node's code (a ``target``), not a built-in unit or a remote one."""
        return self.endpoint is None and self.target is not None

    @property
    def input_method(self) -> str | None:
        """The call made on the way in: ``predict`` for a model, ``transform_input`` for a
        transformer (or a node with the TRANSFORM_INPUT method), none otherwise."""
        if self.type == "MODEL":
            return "predict"
        if self.type == "TRANSFORMER" or "TRANSFORM_INPUT" in self.methods:
            return "transform_input"
        return None

    @property
    def routes(self) -> bool:
        return self.type == "ROUTER" or "ROUTE" in self.methods or self.implementation in ROUTING_BUILTINS

    @property
    def combines(self) -> bool:
        return self.type == "COMBINER" or "AGGREGATE" in self.methods

    @property
    def transforms_output(self) -> bool:
        return self.type == "OUTPUT_TRANSFORMER" or "TRANSFORM_OUTPUT" in self.methods

    @property
    def takes_feedback(self) -> bool:
        return self.type in ("MODEL", "ROUTER") or "SEND_FEEDBACK" in self.methods

    def walk(self) -> Iterator[NodeSpec]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True)
class GraphSpec:
    name: str
    root: NodeSpec
    #: The graph file's folder: relative targets are read from it.
    directory: Path


def read_document(path: Path) -> Any:
    """The file's content (YAML, which JSON is a part of)."""
    import yaml

    try:
        return yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise TargetError(f"{path}: cannot read as YAML or JSON: {exc}") from None


def looks_like_graph(path: Path) -> bool:
    """Whether ``path`` is a graph file: a SeldonDeployment, or a mapping with a ``graph`` node or
    a ``nodes`` table (Cortex files are lists, so the two never collide)."""
    if path.suffix not in SUFFIXES or not path.is_file():
        return False
    try:
        document = read_document(path)
    except TargetError:
        return False
    return isinstance(document, dict) and (
        document.get("kind") == "SeldonDeployment"
        or isinstance(document.get("graph"), dict)
        or isinstance(document.get("nodes"), dict)
    )


def load(path: Path) -> GraphSpec:
    """The graph of the file at ``path``, validated."""
    document = read_document(path)
    if not isinstance(document, dict):
        raise TargetError(f"{path}: a graph file holds a mapping, not {type(document).__name__}")
    if document.get("kind") == "SeldonDeployment":
        name, graph, images = _from_deployment(document, path)
        return GraphSpec(name, _Parser({}, images, path).node(graph, "graph"), path.parent.resolve())
    return _from_short_form(document, path)


def _from_deployment(document: dict[str, Any], path: Path) -> tuple[str, Any, dict[str, _Container]]:
    predictors = (document.get("spec") or {}).get("predictors")
    if not isinstance(predictors, list) or not predictors or not isinstance(predictors[0], dict):
        raise TargetError(f"{path}: a SeldonDeployment needs spec.predictors with a graph")
    predictor = predictors[0]
    if not isinstance(predictor.get("graph"), dict):
        raise TargetError(f"{path}: predictor {predictor.get('name', 0)!r} has no graph")
    name = predictor.get("name") or (document.get("metadata") or {}).get("name") or "graph"
    return str(name), predictor["graph"], _containers(predictor)


@dataclass(frozen=True)
class _Container:
    image: str
    env: dict[str, str]
    #: The componentSpec's ``replicas``: those of the node's deployment on Ray.
    replicas: int | None = None


def _containers(predictor: dict[str, Any]) -> dict[str, _Container]:
    """The containers of ``componentSpecs`` by name: a node's image, and the ``MODEL_NAME`` an s2i
    component names its class with."""
    found: dict[str, _Container] = {}
    for component in predictor.get("componentSpecs") or []:
        replicas = (component or {}).get("replicas")
        replicas = replicas if type(replicas) is int and replicas >= 1 else None  # else Seldon's concern
        for container in ((component or {}).get("spec") or {}).get("containers") or []:
            if isinstance(container, dict) and container.get("name"):
                env = {
                    str(item.get("name")): str(item.get("value", ""))
                    for item in container.get("env") or []
                    if isinstance(item, dict)
                }
                found[str(container["name"])] = _Container(str(container.get("image", "")), env, replicas)
    return found


def _from_short_form(document: dict[str, Any], path: Path) -> GraphSpec:
    table = document.get("nodes") or {}
    if not isinstance(table, dict):
        raise TargetError(f"{path}: 'nodes' must map node names to nodes")
    parser = _Parser(table, {}, path)
    if "graph" in document:
        root: Any = document["graph"]
    elif "root" in document:
        root = document["root"]
    else:
        root = _only_root(table, path)
    spec = parser.node(root, "graph")
    unused = sorted(set(table) - parser.seen)
    if unused:
        raise TargetError(f"{path}: node(s) {unused} are not reachable from the root '{spec.name}'")
    return GraphSpec(str(document.get("name") or spec.name), spec, path.parent.resolve())


def _only_root(table: dict[str, Any], path: Path) -> str:
    """The one node of ``nodes`` no other node names as a child."""
    if not table:
        raise TargetError(f"{path}: no graph: give 'graph' (a node), or 'nodes' (and 'root')")
    named = {
        child
        for node in table.values()
        if isinstance(node, dict)
        for child in node.get("children") or []
        if isinstance(child, str)
    }
    roots = [name for name in table if name not in named]
    if len(roots) != 1:
        detail = "every node is some node's child (a cycle)" if not roots else f"candidates: {roots}"
        raise TargetError(f"{path}: cannot tell the root node; name it with 'root' ({detail})")
    return str(roots[0])


class _Parser:
    def __init__(self, table: dict[str, Any], containers: dict[str, _Container], path: Path) -> None:
        self.table, self.containers, self.path = table, containers, path
        self.seen: set[str] = set()
        self.stack: list[str] = []

    def fail(self, where: str, problem: str) -> TargetError:
        return TargetError(f"{self.path}: {where}: {problem}")

    def node(self, raw: Any, where: str) -> NodeSpec:
        if isinstance(raw, str):
            if raw not in self.table:
                raise self.fail(where, f"unknown node '{raw}' (not in 'nodes')")
            raw = {"name": raw, **(self.table[raw] or {})}
        if not isinstance(raw, dict):
            raise self.fail(where, f"a node is a mapping, not {type(raw).__name__}")
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            raise self.fail(where, "a node needs a 'name'")
        where = f"node '{name}'"
        if name in self.stack:
            cycle = " -> ".join([*self.stack[self.stack.index(name) :], name])
            raise self.fail(where, f"the graph has a cycle: {cycle}")
        if name in self.seen:
            raise self.fail(where, "appears twice; a graph is a tree and node names are unique")
        unknown = sorted(set(raw) - NODE_KEYS)
        if unknown:
            raise self.fail(where, f"unknown key(s) {unknown}; a node takes {sorted(NODE_KEYS)}")
        self.seen.add(name)
        self.stack.append(name)
        try:
            children = raw.get("children") or []
            if not isinstance(children, list):
                raise self.fail(where, "'children' must be a list")
            parsed = tuple(
                self.node(child, f"child {i} of node '{name}'") for i, child in enumerate(children)
            )
        finally:
            self.stack.pop()
        return self._spec(raw, name, where, parsed)

    def _spec(self, raw: dict[str, Any], name: str, where: str, children: tuple[NodeSpec, ...]) -> NodeSpec:
        implementation = raw.get("implementation")
        methods = raw.get("methods") or []
        if not isinstance(methods, list) or not set(methods) <= set(METHODS):
            raise self.fail(where, f"'methods' must be a list of {list(METHODS)}, got {methods!r}")
        kind = (
            raw.get("type") or BUILTINS.get(str(implementation)) or ("UNKNOWN_TYPE" if methods else "MODEL")
        )
        if kind not in TYPES:
            raise self.fail(where, f"unknown type {kind!r}; expected one of {list(TYPES)}")
        endpoint = self._endpoint(raw.get("endpoint"), where)
        container = self.containers.get(name)
        target = raw.get("target") or (container.env.get("MODEL_NAME") if container else None)
        if target is not None and not isinstance(target, str):
            raise self.fail(where, "'target' must be a string")
        # code named here or an address to call replaces what the implementation would run
        server = self._server(raw, implementation, where) if endpoint is None and target is None else None
        if endpoint is None and target is None and server is None and implementation not in BUILTINS:
            raise self.fail(where, self._nothing_to_run(implementation))
        spec = NodeSpec(
            name=name,
            type=kind,
            methods=frozenset(methods),
            children=children,
            target=server.target if server else target,
            dialect=str(raw.get("dialect") or ("seldon" if container or server else "auto")),
            endpoint=endpoint,
            implementation=implementation if implementation in BUILTINS else None,
            parameters=self._parameters(raw.get("parameters"), where),
            image=str(raw.get("image") or (container or server or _Container("", {})).image),
            scale=self._scale(raw, container, where),
            model_uri=raw["modelUri"] if server else None,
        )
        self._check_children(spec, where)
        return spec

    def _server(self, raw: dict[str, Any], implementation: Any, where: str) -> prepackaged.Server | None:
        """The prepackaged server the node names, with the ``modelUri`` it needs; a server inferd
        cannot run is refused here, naming it."""
        if implementation in prepackaged.REFUSED:
            raise self.fail(where, prepackaged.refusal(implementation))
        server = prepackaged.RUNS.get(implementation) if isinstance(implementation, str) else None
        uri = raw.get("modelUri")
        if server is not None and (not isinstance(uri, str) or not uri):
            raise self.fail(
                where, f"implementation {implementation!r} needs a modelUri: the folder of its model"
            )
        return server

    def _nothing_to_run(self, implementation: Any) -> str:
        if implementation:
            runs = sorted([*BUILTINS, *prepackaged.RUNS])
            return (
                f"implementation {implementation!r} is not one inferd runs (it runs {runs}); "
                "give the node a 'target' to load here or an 'endpoint' with service_host to call"
            )
        return (
            "nothing to run: give it a 'target' (a Seldon class, path/model.py:Class, ...), an 'endpoint' "
            f"with service_host and port, or an implementation among {sorted(BUILTINS)}"
        )

    def _check_children(self, spec: NodeSpec, where: str) -> None:
        if spec.combines and not spec.children:
            raise self.fail(where, "a combiner needs children to combine")
        if spec.routes and not spec.children:
            raise self.fail(where, "a router needs children to route to")
        if spec.implementation == "RANDOM_ABTEST" and len(spec.children) != 2:
            raise self.fail(where, f"RANDOM_ABTEST routes between 2 children, not {len(spec.children)}")
        if spec.dialect == "graph":
            raise self.fail(where, "a node cannot be a graph file; serve it and give its endpoint")

    def _endpoint(self, raw: Any, where: str) -> Endpoint | None:
        """An endpoint with a host is a remote node; Seldon's ``{type: REST}`` alone is not."""
        if raw is None:
            return None
        if not isinstance(raw, dict):
            raise self.fail(where, "'endpoint' must be a mapping")
        host = raw.get("service_host") or raw.get("host")
        if not host:
            return None
        protocol = str(raw.get("type") or "REST").upper()
        if protocol not in ("REST", "GRPC"):
            raise self.fail(where, f"endpoint type {raw.get('type')!r} is neither REST nor GRPC")
        own = "httpPort" if protocol == "REST" else "grpcPort"
        port = raw.get("port") or raw.get("service_port") or raw.get(own)
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise self.fail(where, f"endpoint needs a port (port, service_port or {own}), got {port!r}")
        return Endpoint(str(host), port, "REST" if protocol == "REST" else "GRPC")

    def _scale(self, raw: dict[str, Any], container: _Container | None, where: str) -> Scale:
        """The node's ``replicas`` (else its SeldonDeployment component's), ``autoscale`` and
        ``num_cpus``; checked here, so a bad value fails before anything is deployed."""
        replicas = raw.get("replicas", container.replicas if container else None)
        autoscale, cpus = raw.get("autoscale"), raw.get("num_cpus")
        if replicas is not None and (
            isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1
        ):
            raise self.fail(where, f"'replicas' must be a whole number of at least 1, got {replicas!r}")
        if autoscale is not None and not _is_range(autoscale):
            raise self.fail(
                where, f"'autoscale' must be 'MIN:MAX' with MIN <= MAX and MAX >= 1, got {autoscale!r}"
            )
        if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or cpus <= 0):
            raise self.fail(where, f"'num_cpus' must be a number above 0, got {cpus!r}")
        return Scale(replicas, autoscale, float(cpus) if cpus is not None else None)

    def _parameters(self, raw: Any, where: str) -> dict[str, Any] | None:
        if raw is None:
            return None
        try:
            return parse_parameters(orjson.dumps(raw).decode())
        except TargetError as exc:
            raise self.fail(where, exc.message) from None


def _is_range(value: Any) -> bool:
    """Whether ``value`` is ``MIN:MAX`` replicas, as ``--autoscale`` takes them."""
    low, _, high = str(value).partition(":") if isinstance(value, str) else ("", "", "")
    return low.isdigit() and high.isdigit() and int(low) <= int(high) and int(high) >= 1
