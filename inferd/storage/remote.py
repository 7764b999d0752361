"""What a remote URI holds (its files, their sizes and one version for them all) and getting it into
a local folder, with every library's exception said in inferd's terms."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from inferd.storage.backends import Backend, Explanation, backend_for, said
from inferd.storage.errors import (
    IncompleteDownload,
    StorageDenied,
    StorageError,
    StorageNotFound,
    StorageUnreachable,
)


@dataclass(frozen=True)
class RemoteFile:
    source: str  # the path as the backend's filesystem names it
    relative: str  # where it goes under the folder fetched into ("name" or "name/sub/file")
    size: int | None
    version: str | None


@dataclass(frozen=True)
class Listing:
    """Everything a URI names: one file, or every object under a prefix."""

    name: str  # the local name of the file or folder
    files: tuple[RemoteFile, ...]
    version: str | None

    @property
    def size(self) -> int:
        return sum(file.size or 0 for file in self.files)


class Remote:
    """One remote URI, read through its backend."""

    def __init__(self, uri: str, scheme: str, check_seconds: float) -> None:
        self.uri = uri
        self._backend: Backend = backend_for(uri, scheme)
        self._check_seconds = check_seconds

    def listing(self) -> Listing:
        """Ask the store what the URI names. The first request has a deadline, so an unreachable
        store fails the fetch in seconds however long its library would retry."""
        if not urlsplit(self.uri).netloc:
            raise StorageError(self.uri, "the URI names no bucket or host")
        folder_uri = self.uri.endswith("/")
        if folder_uri and not self._backend.folders:
            raise StorageError(self.uri, "an http(s) URI names one file, not a folder; name the file")
        with self._explained():
            info = self._first_answer()
            if info["type"] == "file" and not folder_uri:
                return self._single(info)
            found = self._filesystem.find(self.uri, detail=True)
        return self._folder(info["name"], found)

    @cached_property
    def _filesystem(self) -> Any:
        """The filesystem of the listing and the download (one session for both)."""
        return self._backend.filesystem(False)

    def _first_answer(self) -> Mapping[str, Any]:
        try:
            info: Mapping[str, Any] = self._backend.filesystem(True).info(
                self.uri, timeout=self._check_seconds
            )
        except TimeoutError as exc:
            problem = f"no answer within {self._check_seconds:g} s; check {self._backend.settings}"
            raise StorageUnreachable(self.uri, problem) from exc
        return info

    def download(self, listing: Listing, into: Path) -> None:
        """Get every listed file into ``into``, then check each is as long as the listing said (a
        connection that closes early can look like a complete file)."""
        targets = [into / file.relative for file in listing.files]
        for target in targets:
            target.parent.mkdir(parents=True, exist_ok=True)
        with self._explained():
            self._filesystem.get([file.source for file in listing.files], [str(target) for target in targets])
        for file, target in zip(listing.files, targets, strict=True):
            got = target.stat().st_size
            if file.size is not None and got != file.size:
                raise IncompleteDownload(
                    self.uri, f"{file.relative} arrived with {got} of its {file.size} bytes; try again"
                )

    def _single(self, info: Mapping[str, Any]) -> Listing:
        path = unquote(urlsplit(self.uri).path) if not self._backend.folders else info["name"]
        name = self._safe(PurePosixPath(path).name or urlsplit(self.uri).netloc)
        version = self._backend.version(info)
        return Listing(name, (RemoteFile(self.uri, name, info.get("size"), version),), version)

    def _folder(self, root: str, found: Mapping[str, Mapping[str, Any]]) -> Listing:
        """Every object under ``root/`` (not an object named ``root`` itself, nor folder markers)."""
        prefix = root.rstrip("/") + "/"
        name = self._safe(PurePosixPath(prefix).name)
        files = tuple(
            RemoteFile(
                path,
                f"{name}/{self._safe(path[len(prefix) :])}",
                info.get("size"),
                self._backend.version(info),
            )
            for path, info in sorted(found.items())
            if path.startswith(prefix) and info.get("type") == "file" and not path.endswith("/")
        )
        if not files:
            raise StorageNotFound(self.uri, "the prefix holds no objects; check the bucket and the path")
        digest = hashlib.sha256()
        for file in files:
            digest.update(f"{file.relative}\t{file.size}\t{file.version}\n".encode())
        return Listing(name, files, f"sha256:{digest.hexdigest()}")

    def _safe(self, relative: str) -> str:
        """``relative`` if it stays inside the folder it is written to (an object key may hold
        ``..``, an empty part or a NUL that would write elsewhere, or nowhere)."""
        parts = relative.split("/")
        if any(part in ("", ".", "..") or "\0" in part for part in parts):
            raise StorageError(self.uri, f"the object name '{relative}' cannot be stored as a local file")
        return relative

    @contextmanager
    def _explained(self) -> Iterator[None]:
        with explained(self.uri, self._backend):
            yield


@contextmanager
def explained(uri: str, backend: Backend, action: str = "fetch") -> Iterator[None]:
    """Any exception of the backend's library inside, as the `StorageError` that says it: the
    backend's word on any exception of the chain first (an HTTP FileNotFoundError may be caused by a
    refused connection), then the standard exceptions fsspec raises."""
    try:
        yield
    except StorageError:
        raise
    except Exception as exc:
        error_class, problem = _explain(backend, exc)
        raise error_class(uri, problem, action) from exc


def _explain(backend: Backend, exc: BaseException) -> Explanation:
    chain = list(_chain(exc))
    for link in chain:
        found = backend.explain(link)
        if found:
            return found
    settings = backend.settings
    for kinds, error_class, problem in (
        (
            (ConnectionError, TimeoutError),
            StorageUnreachable,
            f"no answer from the store in time; check {settings}",
        ),
        (PermissionError, StorageDenied, f"access denied; check {settings}"),
        (FileNotFoundError, StorageNotFound, "no such object or prefix; check the bucket and the path"),
    ):
        if any(isinstance(link, kinds) for link in chain):
            return error_class, problem
    return StorageError, f"{type(exc).__name__}: {said(exc)}"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__
