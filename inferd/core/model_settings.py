"""The settings of one model: server-wide defaults, then its entry in the model settings file, then
its ``INFERD_MODELS__<NAME>__...`` variables (or ``ServerSettings.models``)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from inferd.core.batching import BatchSettings
from inferd.core.errors import TargetError
from inferd.core.limits import Limits
from inferd.core.settings import DialectSettings, ModelSettings, ServerSettings


@functools.cache
def _from_file(path: Path) -> dict[str, ModelSettings]:
    import yaml  # only a server given a model settings file reads YAML

    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise TargetError(f"cannot read the model settings file {path}: {exc}") from None
    if not isinstance(document, dict):
        raise TargetError(f"{path} must map model names to their settings")
    try:
        return {str(name): ModelSettings.model_validate(value or {}) for name, value in document.items()}
    except ValidationError as exc:
        raise TargetError(f"invalid model settings in {path}: {exc}") from None


def model_settings(settings: DialectSettings, name: str) -> ModelSettings:
    """What is set for ``name`` (None where the server-wide default applies)."""
    merged: dict[str, Any] = {}
    if settings.model_settings is not None:
        found = _from_file(settings.model_settings.resolve()).get(name)
        if found is not None:
            merged.update(found.model_dump(exclude_none=True))
    own = settings.models.get(name) or settings.models.get(name.lower())
    if own is not None:
        merged.update(own.model_dump(exclude_none=True))
    return ModelSettings(**merged)


def batch_settings(settings: DialectSettings, name: str, opt_in: bool = False) -> BatchSettings:
    """How ``name`` batches. With ``opt_in`` (models whose code sees the batch, such as Seldon's
    predict) only the model's own ``max_batch_size`` turns batching on, never the server-wide one."""
    own = model_settings(settings, name)
    default_size = 1 if opt_in else settings.max_batch_size
    return BatchSettings(
        max_batch_size=own.max_batch_size or default_size,
        max_batch_time_ms=own.max_batch_time_ms or settings.max_batch_time_ms,
        max_queue_size=own.max_queue_size or settings.max_queue_size,
    )


def limits(settings: ServerSettings, name: str) -> Limits:
    """How ``name``'s requests are admitted: its own ``max_concurrency`` else the server-wide one."""
    own = model_settings(settings, name)
    return Limits(
        max_concurrency=own.max_concurrency or settings.max_concurrency,
        max_queue_size=own.max_queue_size or settings.max_queue_size,
        request_timeout=settings.request_timeout,
    )
