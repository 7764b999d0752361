"""Why a model could not be fetched. Each error names the URI, since a server may fetch many, and is
a `ModelLoadError`: the project is well formed but its model cannot be had, so start-up exits 1 (as
for a model that fails to load), not 2 (a target that makes no sense)."""

from __future__ import annotations

from inferd.core.errors import ModelLoadError


class StorageError(ModelLoadError):
    """A URI could not be fetched (or written: ``action``); the message names it, says what went wrong
    and what to do."""

    def __init__(self, uri: str, problem: str, action: str = "fetch") -> None:
        super().__init__(f"cannot {action} {uri}: {problem}")
        self.uri, self.problem = uri, problem


class StorageNotFound(StorageError):
    """No such file, object or prefix (or a prefix with no objects under it)."""


class StorageDenied(StorageError):
    """No credentials were found, or the store refused the ones given."""


class StorageUnreachable(StorageError):
    """The store did not answer: connection refused, unknown host, or no answer in time."""


class IncompleteDownload(StorageError):
    """A transfer ended early (a truncated response): nothing of it is kept."""
