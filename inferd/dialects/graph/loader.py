"""The graph dialect: ``inferd serve graph.yaml`` serves a Seldon inference graph (a SeldonDeployment
or inferd's short form) as one model, on Seldon's external API, its gRPC Seldon service and V2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.routing import BaseRoute

from inferd.core.dataplane import DataPlane
from inferd.core.importer import split_target
from inferd.core.model import Model
from inferd.core.settings import view
from inferd.dialects import get_dialect
from inferd.dialects.base import ServedModel, TryForm
from inferd.dialects.graph import grpc, rest, spec
from inferd.dialects.graph.model import GraphModel
from inferd.dialects.graph.nodes import NodeFactory, factories
from inferd.dialects.graph.settings import GraphSettings
from inferd.protocols.forms import UploadLimits


def served_name(settings: GraphSettings, graph: spec.GraphSpec | None = None) -> str:
    return settings.name or (graph or spec.load(Path(settings.target))).name


class GraphDialect:
    name = "graph"
    settings_type = GraphSettings
    health_paths: tuple[str, ...] = ("/health/ping", "/ready", "/live")

    def detect(self, target: str) -> bool:
        return spec.looks_like_graph(Path(split_target(target)[0]))

    def settings_from_environment(self) -> dict[str, Any]:
        return {}

    def models(self, settings: GraphSettings) -> list[ServedModel]:
        graph = spec.load(Path(settings.target))
        nodes = self.node_factories(graph, settings)

        def factory() -> Model:
            return GraphModel(graph, nodes)

        return [ServedModel(served_name(settings, graph), factory, settings.model_version)]

    def node_factories(self, graph: spec.GraphSpec, settings: GraphSettings) -> dict[str, NodeFactory]:
        """How the graph model builds its nodes: here, every one in its process (an engine may put
        them elsewhere, as the Ray engine does behind deployment handles)."""
        return factories(graph, settings)

    def routes(self, dataplane: DataPlane, settings: GraphSettings) -> list[BaseRoute]:
        return rest.routes(dataplane, served_name(settings), UploadLimits.of(settings))

    def grpc_services(self, dataplane: DataPlane, settings: GraphSettings) -> list[Any]:
        return [grpc.registrar(dataplane, served_name(settings))]

    def try_form(self, name: str, dataplane: DataPlane, settings: GraphSettings) -> TryForm | None:
        """A Seldon message on the graph's external predictions route, as for one component."""
        seldon = get_dialect("seldon")
        return seldon.try_form(name, dataplane, view(settings, seldon.settings_type))


dialect = GraphDialect()
