"""The repository dialect's own settings (besides what every dialect reads, which are the defaults of
every model in the repository)."""

from __future__ import annotations

from pydantic import Field

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
