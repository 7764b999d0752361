"""Real Seldon servers over the components of ``components/``, shared by the module's tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.servers import client_of, serve, served

COMPONENTS = Path(__file__).parent / "components"
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
