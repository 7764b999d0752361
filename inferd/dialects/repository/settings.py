"""The repository dialect's own settings (besides what every dialect reads, which are the defaults of
every model in the repository)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from inferd.core.settings import DialectSettings


class RepositorySettings(DialectSettings):
    """Where the repository is, how often it is read again, and how many of its models are loaded."""

    repository: str | None = None
    """A model repository to serve (``inferd serve --repository DIR``): a folder, or a storage URI
    (``s3://bucket/models/``, ``gs://``, ``file://``), whose every subfolder is a model with its own
    ``inferd.yaml`` or MLServer ``model-settings.json``. Served over V2 REST and gRPC only; see
    docs/repository.md."""

    repository_poll: float | None = Field(None, gt=0)
    """Seconds between two reads of the model repository: new models are loaded, changed ones
    reloaded and removed ones unloaded while the others keep serving. Unset: the repository changes
    only through the V2 repository API (load and unload)."""

    max_loaded_models: int | None = Field(None, ge=1)
    """The most models of the repository loaded at once in each worker: models load on their first
    request and the least recently used is unloaded to make room. Unset: every model is loaded at
    start-up."""

    allowed_outside_targets: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Where a model folder's ``target`` may point besides the folder itself: folders of this machine
    (``/srv/shared-models/``), storage URI prefixes (``s3://bucket/models/``), or ``*`` for
    anywhere. Empty: a target leaving its model folder (``../other/model.py``, an absolute path,
    ``file://``, a link leading out, any storage URI) makes the model unservable, and its load is
    answered 400, so a model folder written through the repository API cannot run code from
    elsewhere. ``--allowed-outside-target`` (repeatable), or ``INFERD_ALLOWED_OUTSIDE_TARGETS``
    comma-separated or a JSON list."""

    @field_validator("allowed_outside_targets", mode="before")
    @classmethod
    def _split_locations(cls, value: Any) -> Any:
        """A list from the environment as a JSON list or comma-separated; empty entries are dropped."""
        if isinstance(value, str):
            text = value.strip()
            value = json.loads(text) if text.startswith("[") else text.split(",")
        if isinstance(value, (list, tuple)):
            return [item.strip() for item in value if not isinstance(item, str) or item.strip()]
        return value
