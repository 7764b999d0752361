"""Content-addressed version bundles: a project folder packed as a deterministic tar.gz, named by the
sha256 of its bytes and stored once under ``root/sha256/<hex>.tar.gz``.

The same project gives the same digest however it arrives (a folder on this machine, or a tar, tar.gz
or zip upload such as ABEJA's CLI sends): entries are sorted, times, owners and modes normalised,
and what a project never needs (``.git``, ``__pycache__``, ``.inferd``, ``*.pyc``) is left out.

An upload is checked before it is trusted. Its structure is walked before tarfile or zipfile reads
it (`archive_headers`: tar long-name and PAX headers, a zip's central directory, capped; the tar's
header bytes count with its contents). The bytes read and the bytes extracted are counted, never
taken from what the archive declares, and stop at a cap (`PayloadTooLarge`); every member must stay
inside the folder (no absolute path, no ``..``, no link leading out, no device file: `InvalidInput`
naming it). Links are created only after every file is written, so no file is ever written through
one, and each is then resolved on disk to prove it stays inside. Work happens in a scratch folder in
``root`` (removed on any outcome), and a bundle appears by an atomic rename.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import lzma
import os
import re
import shutil
import stat
import tarfile
import tempfile
import threading
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

from inferd.core.errors import Conflict, InvalidInput, NotFound, PayloadTooLarge
from inferd.platform.archive_headers import HeaderLimits
from inferd.platform.archive_reader import MAX_LINK_TARGET, Member, Reader
from inferd.platform.bundle_copies import BundleCopies
from inferd.storage.errors import StorageNotFound

#: Folders and files no bundle holds, at any depth.
SKIPPED_NAMES = frozenset({".git", "__pycache__", ".inferd"})
SKIPPED_SUFFIXES = (".pyc",)
DEFAULT_MAX_MEMBERS = 20_000
DEFAULT_MAX_HEADER_BYTES = 64 * 1024
DEFAULT_MAX_METADATA_BYTES = 16 * 1024 * 1024
DIGEST_PATTERN = re.compile(r"sha256:([0-9a-f]{64})")
_CHUNK = 1 << 20
#: What reading a broken archive raises (as opposed to the errors of writing the files it holds).
_UNREADABLE = (
    tarfile.TarError,
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    gzip.BadGzipFile,
    NotImplementedError,  # a zip compression method Python does not read
    RuntimeError,  # an encrypted zip member
    UnicodeDecodeError,  # a zip entry flagged UTF-8 whose name is not
)
#: What creating a member's file says when the archive itself is at fault (a path twice, a file
#: where a folder should be, a name too long).
_MEMBER_ERRNOS = frozenset({errno.EEXIST, errno.ENOTDIR, errno.EISDIR, errno.ENAMETOOLONG, errno.ELOOP})


@dataclass(frozen=True)
class Bundle:
    digest: str
    size: int
    path: Path


class ArtifactStore:
    """Bundles under ``root``. Uploads may read at most ``max_bytes`` and extract at most
    ``max_unpacked_bytes`` (``max_bytes`` unless given; tar headers count) in ``max_members``
    members, with at most ``max_header_bytes`` in one tar long-name or PAX header and
    ``max_metadata_bytes`` in all of them or in a zip's central directory (`archive_headers`). With
    ``copies`` (object storage), every bundle is also kept there, and ``root`` is its cache."""

    def __init__(
        self,
        root: Path,
        max_bytes: int,
        max_members: int = DEFAULT_MAX_MEMBERS,
        max_unpacked_bytes: int | None = None,
        copies: BundleCopies | None = None,
        max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
        max_metadata_bytes: int = DEFAULT_MAX_METADATA_BYTES,
    ) -> None:
        self.root = root
        self.copies = copies
        self.max_bytes = max_bytes
        self.max_members = max_members
        self.max_unpacked_bytes = max_bytes if max_unpacked_bytes is None else max_unpacked_bytes
        self.max_header_bytes, self.max_metadata_bytes = max_header_bytes, max_metadata_bytes
        (root / "sha256").mkdir(parents=True, exist_ok=True)
        #: Bundles a put made and its caller has not released yet (`release`), never discarded; the
        #: lock makes a put's "hold, then place the file" one step against `discard`'s "ask, then unlink".
        self._held: Counter[str] = Counter()
        self._lock = threading.Lock()

    def put_folder(self, folder: Path) -> Bundle:
        """Bundle a project folder of this machine; links leading out of it are left out. The bundle
        is held (kept by `discard`) until the caller, having recorded it, calls `release`."""
        if not folder.is_dir():
            raise InvalidInput(f"{folder} is not a folder")
        with self._scratch() as scratch:
            return self._keep(folder, scratch)

    def put_archive(self, stream: BinaryIO, content_type_or_name: str = "upload") -> Bundle:
        """Bundle an uploaded tar (plain, gz, bz2, xz) or zip, read from ``stream``, once checked; held
        until `release` like `put_folder`'s."""
        with self._scratch() as scratch:
            upload = scratch / "upload"
            _receive(stream, upload, self.max_bytes, content_type_or_name)
            tree = scratch / "tree"
            headers = HeaderLimits(
                self.max_header_bytes, self.max_metadata_bytes, self.max_unpacked_bytes, self.max_members
            )
            limits = _Limits(self.max_unpacked_bytes, headers)
            _extract(upload, tree, limits, content_type_or_name)
            return self._keep(tree, scratch)

    def open(self, digest: str) -> Path:
        """The stored tar.gz of ``digest`` (to send as a download, or unpack), fetched from object
        storage first when only the copies there have it."""
        match = DIGEST_PATTERN.fullmatch(digest) if isinstance(digest, str) else None
        if match is None:
            raise InvalidInput(f"digest {digest!r} must be 'sha256:' and 64 lowercase hex digits")
        path = self.root / "sha256" / f"{match[1]}.tar.gz"
        if not path.is_file() and self.copies is not None:
            try:
                self.copies.fetch(match[1], path)
            except StorageNotFound:
                raise NotFound(f"bundle {digest} does not exist here nor in {self.copies.prefix}") from None
        if not path.is_file():
            raise NotFound(f"bundle {digest} does not exist")
        return path

    def __contains__(self, digest: str) -> bool:
        try:
            self.open(digest)
        except (InvalidInput, NotFound):
            return False
        return True

    def release(self, digest: str) -> None:
        """What a put held may go, once nothing names it (the caller has recorded it, or failed to)."""
        with self._lock:
            self._held[digest] -= 1
            if self._held[digest] <= 0:
                del self._held[digest]

    def discard(self, digest: str, named: Callable[[str], bool]) -> bool:
        """Remove this machine's copy of a bundle when ``named(digest)`` says nothing names it any more
        and no put holds it (asked under the lock a put holds it with, so the same content pushed
        meanwhile keeps its file). Copies in object storage stay: other control processes sharing
        the bucket may name them. Whether the file went."""
        match = DIGEST_PATTERN.fullmatch(digest)
        if match is None:
            return False
        with self._lock:
            if self._held[digest] or named(digest):
                return False
            path = self.root / "sha256" / f"{match[1]}.tar.gz"
            gone = path.is_file()
            path.unlink(missing_ok=True)
        return gone

    def unpack(self, digest: str, into: Path) -> Path:
        """Extract a bundle into the folder ``into``, which must not exist or be empty (`Conflict`);
        it appears whole or not at all."""
        bundle = self.open(digest)
        if into.exists() and (not into.is_dir() or any(into.iterdir())):
            raise Conflict(f"{into} exists already and is not an empty folder")
        into.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=into.parent))
        try:
            _extract(bundle, staging / "tree", _Limits(None, None), digest)
            (staging / "tree").rename(into)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return into

    @contextlib.contextmanager
    def _scratch(self) -> Iterator[Path]:
        scratch = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.root))
        try:
            yield scratch
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _keep(self, folder: Path, scratch: Path) -> Bundle:
        """Pack ``folder`` in ``scratch``, then move it into place unless that content is there already."""
        packed = scratch / "bundle.tar.gz"
        with open(packed, "wb") as file:
            digesting = _Digesting(file)
            _pack(folder, digesting)
            file.flush()
            os.fsync(file.fileno())
        hex = digesting.hash.hexdigest()
        digest, path = f"sha256:{hex}", self.root / "sha256" / f"{hex}.tar.gz"
        with self._lock:
            self._held[digest] += 1
            if not path.is_file():
                os.replace(packed, path)
        if self.copies is not None:
            try:
                self.copies.keep(path, hex)
            except BaseException:
                self.release(digest)
                raise
        return Bundle(digest, digesting.size, path)


class _Digesting:
    """A file being written, hashed and counted on the way."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.hash = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        self.size += len(data)
        return self.file.write(data)

    def flush(self) -> None:
        self.file.flush()


# -- packing -----------------------------------------------------------------------------------------


def pack(folder: Path, out: BinaryIO) -> None:
    """Write ``folder`` to ``out`` as the bundle the store would keep of it (what ``inferd platform
    push`` uploads): the same folder gives the same bytes."""
    _pack(folder, _Digesting(out))


def _pack(folder: Path, out: _Digesting) -> None:
    """Write ``folder`` as a tar.gz whose bytes depend only on the names, contents, executable bits
    and links inside it (gzip without name or time, PAX tar with zero times and owners)."""
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=6) as compressed,
        tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT, encoding="utf-8") as tar,
    ):
        for name, path, info in _entries(folder):
            member = tarfile.TarInfo(name)
            member.mtime, member.uid, member.gid, member.uname, member.gname = 0, 0, 0, "", ""
            if isinstance(info, str):
                member.type, member.mode, member.linkname = tarfile.SYMTYPE, 0o777, info
                tar.addfile(member)
            elif stat.S_ISDIR(info.st_mode):
                member.type, member.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(member)
            else:
                member.mode = 0o755 if info.st_mode & stat.S_IXUSR else 0o644
                member.size = info.st_size
                with open(path, "rb") as content:
                    tar.addfile(member, content)


def _entries(folder: Path) -> list[tuple[str, Path, os.stat_result | str]]:
    """Every folder, regular file and inside-pointing link under ``folder`` (sorted by name, skipped
    names left out), with its stat or, for a link, its target made relative."""
    top = os.path.realpath(folder)
    found: list[tuple[str, Path, os.stat_result | str]] = []
    pending = [""]
    while pending:
        relative = pending.pop()
        for entry in os.scandir(os.path.join(top, relative)):
            name = f"{relative}/{entry.name}" if relative else entry.name
            if _skipped(entry.name):
                continue
            path = Path(top, name)
            if entry.is_symlink():
                target = os.path.realpath(path)
                if _inside(target, top):
                    found.append((name, path, os.path.relpath(target, os.path.dirname(path))))
            elif entry.is_dir(follow_symlinks=False):
                found.append((name, path, entry.stat(follow_symlinks=False)))
                pending.append(name)
            elif entry.is_file(follow_symlinks=False):
                found.append((name, path, entry.stat(follow_symlinks=False)))
    return sorted(found, key=lambda item: item[0])


def _skipped(name: str) -> bool:
    return name in SKIPPED_NAMES or name.endswith(SKIPPED_SUFFIXES)


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


# -- receiving and extracting ------------------------------------------------------------------------


@dataclass
class _Limits:
    """What an archive may hold; ``None`` for no limit (a bundle of this store)."""

    bytes: int | None
    headers: HeaderLimits | None
    used: int = 0

    def take(self, size: int, label: str) -> None:
        self.used += size
        if self.bytes is not None and self.used > self.bytes:
            raise PayloadTooLarge(f"{label} expands past {self.bytes} bytes")


def _receive(stream: BinaryIO, path: Path, max_bytes: int, label: str) -> None:
    """Copy an upload to ``path``, reading at most one byte past ``max_bytes``."""
    received = 0
    with open(path, "wb") as file:
        while chunk := stream.read(min(_CHUNK, max_bytes + 1 - received)):
            received += len(chunk)
            if received > max_bytes:
                raise PayloadTooLarge(f"{label} is larger than {max_bytes} bytes")
            file.write(chunk)
    if not received:
        raise InvalidInput(f"{label} is empty")


def _extract(archive: Path, into: Path, limits: _Limits, label: str) -> None:
    """Extract the tar or zip at ``archive`` into the new folder ``into``, checking every member."""
    into.mkdir()
    top = os.path.realpath(into)
    files: set[str] = set()
    links: list[tuple[str, str, str]] = []
    try:
        with Reader(archive, label, limits.headers) as reader:
            limits.take(reader.header_bytes, label)
            for member in reader.members():
                relative = _member_path(member.name)
                if relative is None or any(_skipped(part) for part in relative.split("/")):
                    continue
                with _naming(member.name):
                    _extract_member(reader, member, relative, into, limits, label, files, links)
    except _UNREADABLE as exc:
        raise InvalidInput(f"{label} is not a readable tar or zip archive: {exc}") from None
    for name, relative, target in links:  # last: no file is ever written through a link
        with _naming(name):
            if os.path.realpath(into / os.path.dirname(relative)) != os.path.join(
                top, os.path.dirname(relative)
            ).rstrip("/"):
                raise InvalidInput(f"archive member {_shown(name)} lies under a link")
            os.symlink(target, into / relative)
    for name, relative, _ in links:
        if not _inside(os.path.realpath(into / relative), top):
            raise InvalidInput(f"archive member {_shown(name)} is a link leading out of the folder")


def _extract_member(
    reader: Reader,
    member: Member,
    relative: str,
    into: Path,
    limits: _Limits,
    label: str,
    files: set[str],
    links: list[tuple[str, str, str]],
) -> None:
    path = into / relative
    if member.kind == "dir":
        path.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or not path.is_dir():
            raise InvalidInput(f"archive member {_shown(member.name)} clashes with another")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if member.kind == "symlink":
        target = member.link
        if not target or os.path.isabs(target) or "\x00" in target or len(target) > MAX_LINK_TARGET:
            raise InvalidInput(f"archive member {_shown(member.name)} is a link leading out of the folder")
        links.append((member.name, relative, target))
    elif member.kind == "hardlink":
        source: str | None = None
        with contextlib.suppress(InvalidInput):
            source = _member_path(member.link)
        if source not in files:
            raise InvalidInput(
                f"archive member {_shown(member.name)} is a hard link to {_shown(member.link)}, "
                "which is no file before it in the archive"
            )
        with open(into / source, "rb") as content:
            _write(content, path, limits, label, executable=os.stat(into / source).st_mode & 0o100 != 0)
        files.add(relative)
    elif member.kind == "file":
        with reader.open(member) as content:
            _write(content, path, limits, label, member.executable)
        files.add(relative)
    else:
        raise InvalidInput(f"archive member {_shown(member.name)} is a {member.kind}, not a file or folder")


def _write(content: IO[bytes], path: Path, limits: _Limits, label: str, executable: bool) -> None:
    """Copy ``content`` to a new file, counting what is actually read against the limit."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(path, flags, 0o755 if executable else 0o644), "wb") as file:
        while chunk := content.read(_CHUNK):
            limits.take(len(chunk), label)
            file.write(chunk)


@contextlib.contextmanager
def _naming(name: str) -> Iterator[None]:
    """Errors of creating a member's file that come from the archive (a name twice, a file where a
    folder is) become `InvalidInput` naming the member; a full disk stays what it is."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in _MEMBER_ERRNOS:
            raise
        raise InvalidInput(f"archive member {_shown(name)} cannot be created: {exc.strerror}") from None


def _member_path(name: str) -> str | None:
    """The member's path inside the folder (``None`` for the folder itself), or `InvalidInput`."""
    if "\\" in name or "\x00" in name:
        raise InvalidInput(f"archive member {_shown(name)} has a backslash or NUL in its path")
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        raise InvalidInput(f"archive member {_shown(name)} has an absolute path")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise InvalidInput(f"archive member {_shown(name)} has '..' in its path")
    return "/".join(parts) or None


def _shown(name: str) -> str:
    return repr(name if len(name) <= 200 else name[:200] + "...")
