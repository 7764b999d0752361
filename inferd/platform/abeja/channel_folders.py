"""The DataLake folder as channels and files: channel ``C`` is the folder ``ROOT/C``, its file ``F``
the file ``ROOT/C/F`` (the layout runs and triggers read, `inferd.platform.abeja.runs.Datalake`).

Every channel id and file id the API is given is one name checked here before it touches the disk: no
separator, no ``.``/``..``, not hidden (hidden names are where uploads are written, and triggers skip
them), so nothing outside a channel's folder can be named. An upload is written to a hidden file in the
channel's folder and linked to its name only when it is whole: a body that breaks off or grows past
the limit leaves nothing behind, and a trigger watching the channel sees the file once, complete.
"""

from __future__ import annotations

import mimetypes
import os
import re
import secrets
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from inferd.core.errors import Conflict, InvalidInput, NotFound, PayloadTooLarge

#: A channel's or file's name: one path segment, not hidden, at most 255 bytes (a file name's limit).
_UNSAFE = re.compile(r"[/\\\x00-\x1f]")
#: How many times a new channel id or a free file name is drawn before giving up.
_DRAWS = 20


def checked(what: str, name: str) -> str:
    """``name`` if it names an entry of one folder and no other place; else InvalidInput."""
    if not name or name.startswith(".") or _UNSAFE.search(name) or len(name.encode()) > 255:
        raise InvalidInput(
            f"{what} {name!r} cannot be used: one name, not starting with '.', without '/', '\\' or "
            "control characters"
        )
    return name


@dataclass(frozen=True)
class Entry:
    """A file of a channel as the folder says it: its name, size and modification time."""

    name: str
    size: int
    modified: datetime


class ChannelFolders:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def channel_ids(self) -> list[str]:
        """The channels: every folder in the root whose name may be a channel id."""
        if not self.root.is_dir():
            return []
        return sorted(
            entry.name
            for entry in os.scandir(self.root)
            if entry.is_dir(follow_symlinks=False) and _usable(entry.name)
        )

    def channel(self, channel_id: str) -> Path:
        folder = self.root / checked("channel id", channel_id)
        if not folder.is_dir() or folder.is_symlink():
            raise NotFound(f"channel {channel_id!r} does not exist")
        return folder

    def created(self, channel_id: str) -> datetime:
        return _moment(self.channel(channel_id).stat().st_mtime)

    def new_channel(self) -> str:
        """A new channel's folder, named like ABEJA's ids: 13 digits."""
        self.root.mkdir(parents=True, exist_ok=True)
        for _ in range(_DRAWS):
            channel_id = str(secrets.randbelow(9 * 10**12) + 10**12)
            try:
                (self.root / channel_id).mkdir()
            except FileExistsError:
                continue
            return channel_id
        raise Conflict("no free channel id was found; try again")

    def entries(self, channel_id: str) -> list[Entry]:
        """The channel's files (its folder's regular files; hidden ones and subfolders are not)."""
        found = []
        for entry in os.scandir(self.channel(channel_id)):
            if entry.is_file(follow_symlinks=False) and _usable(entry.name):
                stat = entry.stat(follow_symlinks=False)
                found.append(Entry(entry.name, stat.st_size, _moment(stat.st_mtime)))
        return found

    def file(self, channel_id: str, file_id: str) -> Path:
        path = self.channel(channel_id) / checked("file id", file_id)
        if not path.is_file() or path.is_symlink():
            raise NotFound(f"file {file_id!r} does not exist in channel {channel_id!r}")
        return path

    async def store(
        self, channel_id: str, wanted: str, body: AsyncIterator[bytes], limit: int, exclusive: bool
    ) -> str:
        """Write ``body`` as the channel's file ``wanted`` (or, when that name is taken and not
        ``exclusive``, ``wanted`` with a suffix before its extension); the name it got."""
        folder = self.channel(channel_id)
        checked("file name", wanted)
        if exclusive and (folder / wanted).exists():
            raise Conflict(f"channel {channel_id!r} has a file {wanted!r} already")
        partial = folder / f".upload-{secrets.token_hex(8)}.part"
        try:
            with open(partial, "xb") as out:
                received = 0
                async for chunk in body:
                    received += len(chunk)
                    if received > limit:
                        raise PayloadTooLarge(f"the file is larger than {limit} bytes")
                    out.write(chunk)
            return _link(partial, folder, wanted, exclusive, channel_id)
        finally:
            partial.unlink(missing_ok=True)


def file_name(metadata_name: str | None, content_type: str, now: datetime) -> str:
    """An upload's name in its channel: the base name of its ``filename`` metadata when usable, else
    an id as ABEJA makes them (``20180515T180605-<uuid>``) with the extension of its content type."""
    if metadata_name:
        base = PurePosixPath(metadata_name.replace("\\", "/")).name
        if _usable(base):
            return base
    extension = mimetypes.guess_extension(content_type.split(";")[0].strip()) or ""
    return f"{now.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4()}{extension}"


def _link(partial: Path, folder: Path, wanted: str, exclusive: bool, channel_id: str) -> str:
    """Link the whole file under its name; a name that appears meanwhile is never overwritten."""
    stem, dot, extension = wanted.partition(".")
    names = (
        [wanted]
        if exclusive
        else [wanted] + [f"{stem}-{secrets.token_hex(3)}{dot}{extension}" for _ in range(_DRAWS)]
    )
    for name in names:
        if len(name.encode()) > 255:
            continue
        try:
            os.link(partial, folder / name)
        except FileExistsError:
            continue
        return name
    raise Conflict(f"channel {channel_id!r} has a file {wanted!r} already")


def _usable(name: str) -> bool:
    try:
        checked("name", name)
    except InvalidInput:
        return False
    return True


def _moment(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, timezone.utc)
