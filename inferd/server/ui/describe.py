"""The JSON the try-it page and ``inferd models`` / ``inferd call`` read: each model's name, dialect,
state, tensors, traffic, and how it is tried (`TryForm`)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from inferd.core.dataplane import DataPlane
from inferd.core.registry import ModelEntry
from inferd.core.settings import DialectSettings
from inferd.core.types import ModelMetadata, TensorSpec
from inferd.dialects.base import Dialect, TryForm, example_tensor
from inferd.protocols import prometheus
from inferd.server.ui.examples import prefilled


def v2_form(name: str, metadata: ModelMetadata) -> TryForm:
    """A V2 infer request with one value per declared input (none declared: the whole request)."""
    if not metadata.inputs:
        example = {"inputs": [{"name": "input-0", "shape": [1, 1], "datatype": "FP32", "data": [[0.0]]}]}
        return TryForm("v2", f"/v2/models/{name}/infer", example)
    values = {spec.name: example_tensor(spec) for spec in metadata.inputs}
    return TryForm("v2", f"/v2/models/{name}/infer", values, tuple(map(tensor, metadata.inputs)))


def tensor(spec: TensorSpec) -> dict[str, Any]:
    return {"name": spec.name, "datatype": spec.datatype, "shape": list(spec.shape)}


class Describer:
    """Describes the models of one process's registry, with traffic summed over every worker."""

    def __init__(self, dialect: Dialect[Any], dataplane: DataPlane, settings: DialectSettings) -> None:
        self.dialect, self.dataplane, self.settings = dialect, dataplane, settings

    def models(self) -> list[dict[str, Any]]:
        traffic = prometheus.traffic()
        return [self.model(entry, traffic) for entry in self.dataplane.registry.entries()]

    def one(self, name: str) -> dict[str, Any]:
        """The latest version of ``name``; ModelNotFound (404) when it is not served."""
        return self.model(self.dataplane.registry.entry(name), prometheus.traffic())

    def model(self, entry: ModelEntry, traffic: dict[str, prometheus.Traffic]) -> dict[str, Any]:
        metadata = entry.metadata if entry.ready else None
        counted = traffic.get(entry.name, prometheus.Traffic())
        form = self.form(entry.name, metadata) if metadata is not None else None
        example = None
        if form is not None:
            form, example = prefilled(form, self.settings.target, self.dataplane.last_inputs.get(entry.name))
        return {
            "name": entry.name,
            "version": entry.version,
            "dialect": entry.dialect or self.dialect.name,
            "state": entry.state.value,
            "ready": entry.ready,
            "reason": entry.reason,
            "source": entry.source or None,
            "cache": entry.cache or None,
            "platform": metadata.platform if metadata else None,
            "inputs": [tensor(spec) for spec in metadata.inputs] if metadata else [],
            "outputs": [tensor(spec) for spec in metadata.outputs] if metadata else [],
            "requests": {"ok": counted.ok, "error": counted.error},
            "latency_ms": counted.mean_ms,
            "try": asdict(form) if form is not None else None,
            "example_from": example,
        }

    def form(self, name: str, metadata: ModelMetadata) -> TryForm:
        own = self.dialect.try_form(name, self.dataplane, self.settings)
        return own if own is not None else v2_form(name, metadata)
