"""What a model repository is to the runtime: a place holding models that can change while the server
runs (MLServer's and Triton's model repository). The registry asks its `ModelSource` what it holds at
start-up, on every poll and on an explicit load, and reconciles what it serves with the answer; how a
folder becomes models (the dialects, the settings files, version folders) is the source's business.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from inferd.core.model import Model

ModelFactory = Callable[[], "Model"]


@dataclass(frozen=True)
class ServedModel:
    """One model version a target or a repository yields, and how to build it in each process."""

    name: str
    factory: ModelFactory
    version: str | None = None
    #: Where it comes from (its folder or URI), shown to operators; "" for a served target's models.
    source: str = ""
    #: Changes whenever its files or settings change, so a poll knows to reload it.
    fingerprint: str = ""
    #: What the model cache did for it ("downloaded", "from the cache", with the object version);
    #: "" for files that were local.
    cache: str = ""
    #: The dialect it follows, where a repository serves several side by side.
    dialect: str = ""


@dataclass(frozen=True)
class Scan:
    """What a repository holds now: the model versions it can serve, and the models it cannot, each
    with why (naming the folder or URI), which a poll leaves serving as they were."""

    models: tuple[ServedModel, ...] = ()
    problems: Mapping[str, str] = field(default_factory=dict)
    #: What each problem was found in (a digest of its folder's files): a poll that finds the same
    #: problem in the same files has nothing new to say (`inferd.core.told`).
    problem_keys: Mapping[str, str] = field(default_factory=dict)

    def names(self) -> set[str]:
        return {served.name for served in self.models} | set(self.problems)


class ModelSource(Protocol):
    """A model repository, as the registry reads and writes it."""

    #: The folder or URI of the repository, for messages.
    uri: str

    def scan(self) -> Scan:
        """Every model the repository holds, in the versions its policy serves."""

    def scan_model(self, name: str) -> Scan:
        """The one model ``name`` (`ModelNotFound` when the repository has no such model)."""

    def write(self, name: str, config: Mapping[str, Any] | None, files: Mapping[str, bytes]) -> None:
        """Put model ``name``'s settings (``config``) and ``files`` (relative path → content) into the
        repository, replacing what it had: tritonclient's ``load_model(config=..., files=...)``."""
