"""Reading a repository's folder into models: every immediate subfolder (not hidden, not starting
with ``_``) is a model, built by the dialect its settings file names (or the one its code follows)
with the repository's settings as defaults. A folder that cannot be served becomes a problem naming
the model and the folder, never an exception: the other models are served all the same.

A folder is built again only when its files changed (their paths, sizes and modification times, or
their contents for a copy fetched from object storage), and then without the modules its old files
were imported as, so a changed ``model.py`` runs as it is now.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from inferd.core.errors import InferdError
from inferd.core.importer import forget_modules_under, split_target
from inferd.core.repository import Scan, ServedModel
from inferd.core.settings import DialectSettings, ServerSettings
from inferd.core.user_code import is_own_failure
from inferd.dialects import resolve_dialect
from inferd.dialects.base import Dialect
from inferd.dialects.repository.files import FolderProblem, read_settings
from inferd.dialects.repository.settings import RepositorySettings
from inferd.dialects.repository.versions import PolicyError, parse_policy, version_folders
from inferd.storage.cache import ModelCache
from inferd.storage.confine import outside_problem
from inferd.storage.locations import is_remote
from inferd.storage.targets import local_target

logger = logging.getLogger("inferd.repository")

#: What a model does not take from the repository's settings: what and where it is.
NOT_INHERITED = frozenset({"target", "name", "model_version"}) | (
    RepositorySettings.model_fields.keys() - DialectSettings.model_fields.keys()
)
#: Settings of the server as a whole, which one model's file cannot change (ignored, with a warning).
SERVER_KEYS = frozenset(ServerSettings.model_fields.keys() - DialectSettings.model_fields.keys())
#: One file of a model folder: its path in the folder and what changes when it does.
Entry = tuple[str, str]


def model_folders(root: Path) -> list[Path]:
    """The model folders of a repository: its subfolders, but hidden ones and those starting with
    ``_`` (where writes are prepared, and ``__pycache__``)."""
    return sorted(
        child for child in root.iterdir() if child.is_dir() and not child.name.startswith((".", "_"))
    )


@dataclass(frozen=True)
class Scanned:
    """What one model folder gave, and the digest of the files it gave it from."""

    digest: str
    label: str
    models: tuple[ServedModel, ...] = ()
    #: (model name, why it cannot be served)
    problem: tuple[str, str] | None = None

    def names(self) -> set[str]:
        return {served.name for served in self.models} | ({self.problem[0]} if self.problem else set())


@dataclass
class Scanner:
    """Builds the models of a repository's folders, again only for the folders that changed.
    ``defaults``: the repository's settings, what every model's file overrides; ``by_content``:
    digest file contents rather than sizes and times (a copy fetched from storage is rewritten
    whole on every change, so only contents tell which models changed)."""

    defaults: RepositorySettings
    cache: ModelCache
    by_content: bool = False
    _seen: dict[str, Scanned] = field(default_factory=dict)
    _hashes: dict[tuple[str, int, int], str] = field(default_factory=dict)

    def scan(self, root: Path, label: Callable[[Path], str]) -> Scan:
        """Every model of the repository at ``root``; ``label`` names a folder in messages."""
        results = {folder.name: self._folder(folder, label(folder)) for folder in model_folders(root)}
        self._seen = results
        return combine(results.values())

    def _folder(self, folder: Path, label: str) -> Scanned:
        files = self._listing(folder)
        digest = _digest(files)
        seen = self._seen.get(folder.name)
        if seen is not None and seen.digest == digest and seen.label == label:
            return seen
        forget_modules_under(folder)
        name = folder.name
        try:
            settings = read_settings(folder)
            name = str((settings or {}).get("name") or folder.name)
            models = self._build(folder, name, settings, files, label)
        except BaseException as exc:  # user code runs on import: what it raises is this model's problem
            if not is_own_failure(exc):
                raise
            return Scanned(digest, label, problem=(name, f"model '{name}' in {label}: {_reason(exc)}"))
        return Scanned(digest, label, models)

    def _build(
        self, folder: Path, name: str, settings: dict[str, Any] | None, files: list[Entry], label: str
    ) -> tuple[ServedModel, ...]:
        values = dict(settings or {})
        policy = parse_policy(values.pop("versions", None))
        versions = version_folders(folder)
        if not versions:
            return self._version(
                folder, folder, name, values, None, _fingerprint(files, None), label, settings is None
            )
        chosen = policy.select(list(versions))
        if not chosen:
            raise FolderProblem(f"its version policy serves none of its versions {sorted(versions)}")
        built: list[ServedModel] = []
        for number in chosen:
            own = read_settings(versions[number]) or {}
            if "versions" in own:
                raise FolderProblem(f"{number}/: 'versions' belongs in the model folder's settings file")
            fingerprint = _fingerprint(files, str(number))
            merged = {**values, **own}
            built += self._version(
                versions[number], folder, name, merged, str(number), fingerprint, label, False
            )
        return tuple(built)

    def _version(
        self,
        code: Path,
        home: Path,
        name: str,
        values: dict[str, Any],
        version: str | None,
        fingerprint: str,
        label: str,
        bare: bool,
    ) -> tuple[ServedModel, ...]:
        """The models of one version, whose code is in folder ``code`` of the model folder ``home``
        (where its target must stay, `outside_problem`). ``bare``: the folder has no settings file
        (what it holds must tell its dialect)."""
        values = dict(values)
        chosen = str(values.pop("dialect", None) or "auto")
        written = str(values.pop("target", None) or ".")
        self._confined(written, code, home)
        dialect, target = self._dialect(chosen, written, code, home, bare)
        values = _own_keys(dialect, name, values)
        if version is not None:
            values["model_version"] = version
        fields = dialect.settings_type.model_fields
        given = {
            key: value
            for key, value in dict(self.defaults).items()
            if key in fields and key not in NOT_INHERITED
        }
        try:
            own = dialect.settings_type.model_validate({**given, **values, "target": target, "name": name})
        except ValidationError as exc:
            raise FolderProblem(f"invalid settings: {_validation(exc)}") from None
        return tuple(
            replace(
                served,
                version=version or served.version,
                source=label,
                fingerprint=fingerprint,
                dialect=dialect.name,
            )
            for served in dialect.models(own)
        )

    def _confined(self, target: str, code: Path, home: Path) -> None:
        """Refuse a target leaving the model folder ``home`` that the settings do not allow."""
        allowed = self.defaults.allowed_outside_targets
        problem = outside_problem(target, code, allowed, "the model's folder", home=home)
        if problem is not None:
            raise FolderProblem(problem)

    def _dialect(
        self, chosen: str, target: str, code: Path, home: Path, bare: bool
    ) -> tuple[Dialect[Any], str]:
        """The dialect of a version and its target as this machine loads it: relative to ``code``
        (a module name given as a file of the folder), or fetched when it names object storage. A
        local candidate is checked to stay in ``home`` before any of its code is imported (the file
        a module name or a path came to, through links)."""
        candidates = self._targets(target, code, chosen)
        problem: InferdError | None = None
        for candidate in candidates:
            if not is_remote(target):
                self._confined(candidate, code, home)
            try:
                dialect = resolve_dialect(chosen, candidate)
            except InferdError as exc:
                problem = problem or exc
                continue
            if dialect.name == "repository":
                raise FolderProblem("a model folder cannot itself be a model repository")
            return dialect, candidate
        assert problem is not None
        if bare:
            raise FolderProblem(
                f"it has no inferd.yaml or model-settings.json, and what it holds is not servable: {problem}"
            )
        raise problem

    def _targets(self, target: str, code: Path, dialect: str) -> list[str]:
        if is_remote(target):
            return [local_target(target, self.cache)]
        module, attribute = split_target(target)
        path = code / module
        suffix = f":{attribute}" if attribute else ""
        if path.exists():
            return [str(path.resolve()) + suffix]
        file = code / (module.replace(".", "/") + ".py")
        if "/" in module or module.endswith(".py") or not file.is_file():
            return [target]
        # A module of the folder, as a file: another model's module of that name must not answer it.
        # Seldon names a class by its module's name alone (MyModel: class MyModel of MyModel.py).
        as_class = f"{file.resolve()}:{attribute or module.rpartition('.')[2]}"
        if attribute or dialect == "seldon":
            return [as_class]
        return [str(file.resolve()), as_class] if dialect == "auto" else [str(file.resolve())]

    def _listing(self, folder: Path) -> list[Entry]:
        """The files of a model folder (Python's caches and hidden files aside, which serving writes)
        with their sizes and times, or their contents' digests."""
        found: list[Entry] = []
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
                continue
            if not path.is_file():
                continue
            status = path.stat()
            found.append((relative.as_posix(), self._content(path, status.st_size, status.st_mtime_ns)))
        return found

    def _content(self, path: Path, size: int, mtime: int) -> str:
        if not self.by_content:
            return f"{size}:{mtime}"
        key = (str(path), size, mtime)
        if key not in self._hashes:
            self._hashes[key] = hashlib.sha256(path.read_bytes()).hexdigest()
        return self._hashes[key]


def combine(results: Iterable[Scanned]) -> Scan:
    """One scan of the folders' results; a name two folders give is a problem naming both, and
    neither is served under it."""
    results = list(results)
    owners: dict[str, list[str]] = {}
    for result in results:
        for name in result.names():
            owners.setdefault(name, []).append(result.label)
    problems = {result.problem[0]: result.problem[1] for result in results if result.problem is not None}
    for name, labels in owners.items():
        if len(labels) > 1:
            problems[name] = (
                f"model '{name}' is given by {len(labels)} folders: {' and '.join(labels)}; rename one "
                "(its folder, or the name in its settings file)"
            )
    served = tuple(model for result in results for model in result.models if model.name not in problems)
    keys = {name: ",".join(r.digest for r in results if name in r.names()) for name in problems}
    return Scan(served, problems, keys)


def _own_keys(dialect: Dialect[Any], name: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with the server's settings dropped (with a warning); one the dialect does not know is
    a problem."""
    known = dialect.settings_type.model_fields
    server = sorted(set(values) & SERVER_KEYS - known.keys())
    if server:
        logger.warning("model %s: %s are the server's settings, ignored in a model's file", name, server)
    unknown = sorted(set(values) - known.keys() - SERVER_KEYS)
    if unknown:
        raise FolderProblem(f"unknown settings {unknown} for a {dialect.name} model; see docs/settings.md")
    return {key: value for key, value in values.items() if key in known}


def _fingerprint(files: list[Entry], version: str | None) -> str:
    """The digest of what one version is made of: the model folder's own files and, for a version,
    its version folder's (another version's files changing leaves it serving)."""

    def belongs(path: str) -> bool:
        first = path.split("/", 1)[0]
        return version is None or first == version or not (first.isdigit() and "/" in path)

    return _digest([entry for entry in files if belongs(entry[0])])


def _digest(files: list[Entry]) -> str:
    digest = hashlib.sha256()
    for path, content in files:
        digest.update(f"{path}\0{content}\n".encode())
    return digest.hexdigest()[:16]


def _reason(exc: BaseException) -> str:
    if isinstance(exc, (FolderProblem, PolicyError)):
        return str(exc)
    if isinstance(exc, InferdError):
        return exc.message
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def _validation(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(map(str, error['loc']))}: {error['msg'].removeprefix('Value error, ')}"
        for error in exc.errors()
    )
