"""Settings in parts: each dialect declares its own settings beside its code, `Settings` gathers
them with the server's, and a dialect is given its own part alone (issue 25, §1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferd.config.settings import PARTS, Settings
from inferd.core.settings import DialectSettings, ServerSettings, view
from inferd.dialects import DIALECTS, get_dialect
from inferd.server.app import build_runtime

#: One value, not the default, of each dialect's own settings.
OWN_VALUES = {
    "seldon": {"service_type": "ROUTER"},
    "graph": {"graph_node_timeout": 5.0},
    "deepaas": {"base_path": "/b", "warm": False},
    "abeja": {"abeja_style": "19.04", "max_video_seconds": 9.0},
    "repository": {"repository": "models/", "repository_poll": 2.0, "max_loaded_models": 3},
}
EVERY_OWN = {name: value for values in OWN_VALUES.values() for name, value in values.items()}


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_a_dialect_is_given_its_own_settings_and_what_every_dialect_reads(name: str) -> None:
    dialect = get_dialect(name)
    settings = Settings(target="t", name="m", port=9999, max_upload_files=7, **EVERY_OWN)
    own = view(settings, dialect.settings_type)
    assert type(own) is dialect.settings_type
    assert (own.target, own.name, own.max_upload_files) == ("t", "m", 7)
    for field, value in OWN_VALUES.get(name, {}).items():
        assert getattr(own, field) == value
    others = set(EVERY_OWN) - set(OWN_VALUES.get(name, {}))
    assert not others & set(type(own).model_fields)
    assert not hasattr(own, "port") and not hasattr(own, "workers")


def test_settings_gather_the_server_and_every_dialect() -> None:
    for name in DIALECTS:
        assert issubclass(Settings, get_dialect(name).settings_type)
    assert set(Settings.model_fields) == {field for part in PARTS for field in part.model_fields}


def test_the_server_does_not_declare_a_dialects_own_settings() -> None:
    assert not set(EVERY_OWN) & set(ServerSettings.model_fields)
    assert not set(EVERY_OWN) & set(DialectSettings.model_fields)


def test_a_dialects_settings_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERD_ABEJA_STYLE", "18.10")
    monkeypatch.setenv("INFERD_SERVICE_TYPE", "TRANSFORMER")
    settings = Settings()
    assert (settings.abeja_style, settings.service_type) == ("18.10", "TRANSFORMER")


def test_the_runtime_holds_the_dialects_part_alone(tmp_path: Path) -> None:
    model = tmp_path / "Echo.py"
    model.write_text("class Echo:\n    def transform_input(self, X, names):\n        return X\n")
    runtime = build_runtime(Settings(target=f"{model}:Echo", dialect="seldon", service_type="TRANSFORMER"))
    assert type(runtime.dialect_settings).__name__ == "SeldonSettings"
    assert runtime.dialect_settings.service_type == "TRANSFORMER"  # type: ignore[attr-defined]
    assert not hasattr(runtime.dialect_settings, "grpc_port")
