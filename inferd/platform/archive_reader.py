"""The members of an uploaded or stored archive, read by `tarfile` or `zipfile` once
`archive_headers` has walked an upload's structure (apart from `artifacts`, which extracts and packs
bundles, so that each stays small)."""

from __future__ import annotations

import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from inferd.core.errors import PayloadTooLarge
from inferd.platform.archive_headers import HeaderLimits, check_tar, check_zip

MAX_LINK_TARGET = 4096
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


@dataclass(frozen=True)
class Member:
    name: str
    kind: str  # "file", "dir", "symlink", "hardlink" or what else it is (refused)
    executable: bool = False
    link: str = ""
    #: The reader's own description of it (a TarInfo or a ZipInfo).
    source: tarfile.TarInfo | zipfile.ZipInfo | None = None


class Reader:
    """The members of a tar (any compression tarfile reads) or a zip, told apart by their first bytes.
    With ``limits`` (an upload), the archive is walked first (`check_tar`, `check_zip`) and
    ``header_bytes`` is what its tar headers took; without, it is a bundle of the store's own."""

    def __init__(self, path: Path, label: str, limits: HeaderLimits | None) -> None:
        self.label = label
        self.max_members = None if limits is None else limits.members
        self.header_bytes = 0
        with open(path, "rb") as file:
            head = file.read(4)
        self.zip: zipfile.ZipFile | None = None
        self.tar: tarfile.TarFile | None = None
        if head in _ZIP_MAGIC:
            if limits is not None:
                check_zip(path, limits, label)
            self.zip = zipfile.ZipFile(path)
        else:
            if limits is not None:
                self.header_bytes = check_tar(path, limits, label).headers
            self.tar = tarfile.open(path, "r:*")

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.zip is not None:
            self.zip.close()
        if self.tar is not None:
            self.tar.close()

    def members(self) -> Iterator[Member]:
        count = 0
        for member in self._zip_members() if self.zip is not None else self._tar_members():
            count += 1
            if self.max_members is not None and count > self.max_members:
                raise PayloadTooLarge(f"{self.label} has more than {self.max_members} members")
            yield member

    def open(self, member: Member) -> IO[bytes]:
        if isinstance(member.source, zipfile.ZipInfo) and self.zip is not None:
            return self.zip.open(member.source)
        assert isinstance(member.source, tarfile.TarInfo) and self.tar is not None
        content = self.tar.extractfile(member.source)
        assert content is not None
        return content

    def _tar_members(self) -> Iterator[Member]:
        assert self.tar is not None
        for info in self.tar:
            if info.isreg():
                yield Member(info.name, "file", bool(info.mode & 0o100), source=info)
            elif info.isdir():
                yield Member(info.name, "dir")
            elif info.issym():
                yield Member(info.name, "symlink", link=info.linkname)
            elif info.islnk():
                yield Member(info.name, "hardlink", link=info.linkname)
            else:
                kinds = {tarfile.CHRTYPE: "character device", tarfile.BLKTYPE: "block device"}
                yield Member(info.name, kinds.get(info.type, "fifo" if info.isfifo() else "special file"))

    def _zip_members(self) -> Iterator[Member]:
        assert self.zip is not None
        infos = self.zip.infolist()
        if self.max_members is not None and len(infos) > self.max_members:
            raise PayloadTooLarge(f"{self.label} has more than {self.max_members} members")
        for info in infos:
            mode = info.external_attr >> 16
            if info.is_dir():
                yield Member(info.filename, "dir")
            elif stat.S_ISLNK(mode):
                with self.zip.open(info) as content:
                    target = content.read(MAX_LINK_TARGET + 1)
                yield Member(info.filename, "symlink", link=target.decode("utf-8", "replace"))
            elif stat.S_IFMT(mode) in (0, stat.S_IFREG):
                yield Member(info.filename, "file", bool(mode & 0o100), source=info)
            else:
                yield Member(info.filename, "device or special file")
