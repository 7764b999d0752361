"""Real Seldon servers over the components of ``components/``, shared by the module's tests, and the
app of a server whose model is not loaded (for the graph's tests too)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette

from inferd.config.settings import Settings
from inferd.core.dataplane import DataPlane
from inferd.core.model import Model
from inferd.core.registry import ModelRegistry
from inferd.core.settings import view
from inferd.core.types import ServerMetadata
from inferd.dialects import get_dialect
from inferd.protocols.prometheus import registry
from inferd.server.app import Runtime, create_app
from tests.servers import client_of, serve, served

COMPONENTS = Path(__file__).parent / "components"
#: Seldon's predictions and feedback routes, which a component and a graph both serve.
PREDICTION_AND_FEEDBACK_PATHS = (
    "/predict",
    "/api/v1.0/predictions",
    "/api/v0.1/predictions",
    "/send-feedback",
    "/api/v1.0/feedback",
    "/api/v0.1/feedback",
)
PARAMETERS = json.dumps(
    [
        {"name": "factor", "value": "3", "type": "INT"},
        {"name": "label", "value": "hello", "type": "STRING"},
        {"name": "enabled", "value": "true", "type": "BOOL"},
        {"name": "ratio", "value": "0.5", "type": "FLOAT"},
    ]
)
DEPLOYMENT_ENV = {
    "PREDICTIVE_UNIT_ID": "classifier",
    "PREDICTIVE_UNIT_IMAGE": "seldonio/everything:0.3",
    "SELDON_DEPLOYMENT_ID": "mydep",
    "PREDICTOR_ID": "main",
    "PREDICTOR_LABELS": '{"version": "v7"}',
    "PREDICTIVE_UNIT_METRICS_ENDPOINT": "/prometheus",
}


def component(name: str, *args: str, env: dict[str, str] | None = None) -> Any:
    """A session fixture serving the component class ``name`` of ``components/``."""
    return served(lambda: serve(name, "--dialect", "seldon", *args, env=env, cwd=COMPONENTS))


identity_server = component("Identity")
everything_server = component("Everything", "--parameters", PARAMETERS, env=DEPLOYMENT_ENV)
raw_server = component("Raw")
legacy_server = component("Legacy")
identity = client_of("identity_server")
everything = client_of("everything_server")
raw = client_of("raw_server")


def unloaded_app(dialect: str, name: str, registered: bool) -> Starlette:
    """The app of a ``dialect`` server of model ``name``, which is registered (but never loaded) or
    not served at all."""
    registry = ModelRegistry()
    if registered:
        registry.add(name, unloadable)
    dataplane = DataPlane(registry, ServerMetadata("inferd", "test", ()))
    settings = Settings(dialect=dialect, target="unused", name=name)
    found = get_dialect(dialect)
    return create_app(Runtime(settings, found, view(settings, found.settings_type), registry, dataplane))


def unloadable() -> Model:
    raise AssertionError("the test never loads its model")


def requests_total(model: str, protocol: str, outcome: str) -> float:
    """``inferd_requests_total`` as this process counted it (an app served in a thread)."""
    labels = {"model": model, "protocol": protocol, "outcome": outcome}
    return registry().get_sample_value("inferd_requests_total", labels) or 0.0


def served_requests_total(url: str, model: str, protocol: str, outcome: str) -> float:
    """``inferd_requests_total`` as the server at ``url`` shows it on ``/metrics``."""
    text = httpx.get(f"{url}/metrics").text
    labels = f'model="{model}",outcome="{outcome}",protocol="{protocol}"'
    found = re.search(rf"^inferd_requests_total\{{{labels}\}} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0
