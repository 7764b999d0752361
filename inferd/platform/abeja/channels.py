"""ABEJA's DataLake API over the DataLake folder: the routes ``abeja datalake ...`` (abejacli) and the
SDK's ``abeja.datalake`` client call for channels (``/organizations/{o}/channels...``) and their files
(``/channels/{c}...``).

A channel is a folder and its files are files (`ChannelFolders`), so a file uploaded here is what runs
and triggers read, and what a run writes to an output channel is listed and downloaded here. A file's
id is its name in the folder: the ``filename`` metadata of its upload (a suffix added when the name is
taken), else an id like ABEJA's. Names, descriptions, content types and metadata are kept in the
platform's SQLite file (`ChannelIndex`). Downloads go through presigned URLs, as ABEJA's S3 URLs did:
the CLI fetches them without credentials.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import time
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote, unquote

from pydantic import Field
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response

from inferd.core.errors import InvalidInput
from inferd.platform.abeja.bodies import Body, parse
from inferd.platform.abeja.channel_folders import ChannelFolders, Entry, file_name
from inferd.platform.abeja.channel_index import ChannelIndex, ChannelRow, FileRow
from inferd.platform.abeja.presign import LIFETIME_SECONDS, Presigner

STORAGE_TYPE = "datalake"
META_PREFIX = "x-abeja-meta-"
FILENAME = META_PREFIX + "filename"
DEFAULT_CONTENT_TYPE = "application/octet-stream"
#: Files answered per page of ``GET /channels/{c}`` unless ``items_per_page`` says otherwise, and at most.
PAGE, MAX_PAGE = 100, 1000
ARCHIVED_FILTERS = ("exclude_archived", "include_archived", "only_archived")


class NewChannel(Body):
    name: str | None = None
    description: str | None = None
    storage_type: str = STORAGE_TYPE


class ChannelChange(Body):
    name: str | None = Field(None, min_length=1)
    description: str | None = None


class DatalakeChannels:
    def __init__(
        self, folders: ChannelFolders, index: ChannelIndex, presigner: Presigner, max_file: int
    ) -> None:
        self.folders, self.index, self.presigner, self.max_file = folders, index, presigner, max_file

    # ---- channels ----

    async def list_channels(self, request: Request) -> Response:
        wanted = request.query_params.get("filter_archived", "exclude_archived")
        if wanted not in ARCHIVED_FILTERS:
            raise InvalidInput(f"filter_archived {wanted!r} is not one of {', '.join(ARCHIVED_FILTERS)}")
        limit = _number(request, "limit", 1000, 1, 1000)
        offset = _number(request, "offset", 0, 0, None)
        channels = [self._channel(channel_id) for channel_id in self.folders.channel_ids()]
        kept = [
            c
            for c in channels
            if wanted == "include_archived" or c["archived"] == (wanted == "only_archived")
        ]
        page = kept[offset : offset + limit]
        answer = {**_organization(request), "channels": page, "limit": limit, "offset": offset}
        return JSONResponse({**answer, "has_next": offset + limit < len(kept)})

    async def create_channel(self, request: Request) -> Response:
        body: NewChannel = parse(NewChannel, await request.body())
        if body.storage_type != STORAGE_TYPE:
            raise InvalidInput(
                f"storage_type {body.storage_type!r}: inferd's DataLake keeps {STORAGE_TYPE!r} channels only"
            )
        channel_id = self.folders.new_channel()
        moment = datetime.now(timezone.utc)
        try:
            row = ChannelRow(body.name or channel_id, body.description or "", False, moment, moment)
            self.index.put_channel(channel_id, row)
        except BaseException:
            (self.folders.root / channel_id).rmdir()
            raise
        return self._channel_answer(request, channel_id)

    async def channel(self, request: Request) -> Response:
        return self._channel_answer(request, request.path_params["channel"])

    async def update_channel(self, request: Request) -> Response:
        channel_id = request.path_params["channel"]
        body: ChannelChange = parse(ChannelChange, await request.body())
        row = self._channel_row(channel_id)
        changed = {key: value for key, value in body.model_dump().items() if value is not None}
        updated_at = datetime.now(timezone.utc)
        self.index.put_channel(channel_id, replace(row, **changed, updated_at=updated_at))
        return self._channel_answer(request, channel_id)

    async def archive(self, request: Request) -> Response:
        return self._archived(request, True)

    async def unarchive(self, request: Request) -> Response:
        return self._archived(request, False)

    def _archived(self, request: Request, archived: bool) -> Response:
        channel_id = request.path_params["channel"]
        row = self._channel_row(channel_id)
        changed = replace(row, archived=archived, updated_at=datetime.now(timezone.utc))
        self.index.put_channel(channel_id, changed)
        return self._channel_answer(request, channel_id)

    def _channel_row(self, channel_id: str) -> ChannelRow:
        """The channel's row; a folder made by hand gets one with defaults."""
        row = self.index.channel(channel_id)
        if row is None:
            moment = self.folders.created(channel_id)
            return ChannelRow(channel_id, "", False, moment, moment)
        self.folders.channel(channel_id)  # NotFound when its folder is gone
        return row

    def _channel(self, channel_id: str) -> dict[str, Any]:
        row = self._channel_row(channel_id)
        return {
            "channel_id": channel_id,
            "name": row.name,
            "display_name": row.name,
            "description": row.description,
            "storage_type": STORAGE_TYPE,
            "security_method": "organization",
            "archived": row.archived,
            "created_at": _channel_time(row.created_at),
            "updated_at": _channel_time(row.updated_at),
        }

    def _channel_answer(self, request: Request, channel_id: str) -> Response:
        return JSONResponse({**_organization(request), "channel": self._channel(channel_id)})

    # ---- files ----

    async def upload(self, request: Request) -> Response:
        """The raw body is the file; ``Content-Type`` its content type, ``x-abeja-meta-*`` headers
        its metadata (URL-quoted, as the clients send them); ``conflict_target=filename`` refuses a
        name the channel has (409) instead of choosing another."""
        channel_id = request.path_params["channel"]
        conflict = request.query_params.get("conflict_target")
        if conflict not in (None, "filename"):
            raise InvalidInput(f"conflict_target {conflict!r}: only 'filename' is known")
        content_type = request.headers.get("content-type") or DEFAULT_CONTENT_TYPE
        metadata = {
            unquote(key): unquote(value)
            for key, value in request.headers.items()
            if key.startswith(META_PREFIX)
        }
        moment = datetime.now(timezone.utc)
        wanted = file_name(metadata.get(FILENAME), content_type, moment)
        name = await self.folders.store(
            channel_id, wanted, request.stream(), self.max_file, exclusive=conflict is not None
        )
        try:
            self.index.put_file(channel_id, name, FileRow(content_type, moment, metadata))
        except BaseException:
            (self.folders.channel(channel_id) / name).unlink(missing_ok=True)
            raise
        return JSONResponse(self._file(request, channel_id, self._entry(channel_id, name)))

    async def list_files(self, request: Request) -> Response:
        """One page of the channel's files, by upload time (``sort=-uploaded_at``: newest first),
        those uploaded from ``start`` to ``end`` (``YYYYMMDD``, UTC) when given; ``next_page_token``
        carries the query on."""
        channel_id = request.path_params["channel"]
        query = _page_query(request)
        known = self.index.files(channel_id)
        entries = self.folders.entries(channel_id)
        rows = [(entry, known.get(entry.name)) for entry in entries]
        rows = [(entry, row) for entry, row in rows if _within(_uploaded(entry, row), query)]
        rows.sort(key=lambda pair: (_uploaded(*pair), pair[0].name), reverse=query["sort"].startswith("-"))
        offset, size = query["offset"], query["size"]
        files = [self._shape(request, channel_id, entry, row) for entry, row in rows[offset : offset + size]]
        more = offset + size < len(rows)
        token = _token({**query, "offset": offset + size}) if more else None
        return JSONResponse({"files": files, "next_page_token": token})

    async def file(self, request: Request) -> Response:
        channel_id, file_id = request.path_params["channel"], request.path_params["file"]
        return JSONResponse(self._file(request, channel_id, self._entry(channel_id, file_id)))

    async def content(self, request: Request) -> Response:
        """The file's bytes (``download_uri``: presigned, or with credentials)."""
        channel_id, file_id = request.path_params["channel"], request.path_params["file"]
        path = self.folders.file(channel_id, file_id)
        row = self.index.file(channel_id, file_id)
        return FileResponse(path, media_type=_content_type(file_id, row))

    async def put_metadata(self, request: Request) -> Response:
        channel_id, file_id = request.path_params["channel"], request.path_params["file"]
        try:
            given = json.loads(await request.body() or b"{}")
        except ValueError:
            raise InvalidInput("the body must be a JSON object of metadata") from None
        if not isinstance(given, dict) or not all(isinstance(v, str) for v in given.values()):
            raise InvalidInput("the body must be a JSON object of string metadata values")
        entry = self._entry(channel_id, file_id)
        row = self.index.file(channel_id, file_id)
        kept = row or FileRow(_content_type(file_id, None), entry.modified)
        metadata = {unquote(str(key)): unquote(value) for key, value in given.items()}
        self.index.put_file(channel_id, file_id, replace(kept, metadata=metadata))
        return JSONResponse(self._file(request, channel_id, entry))

    async def delete_file(self, request: Request) -> Response:
        channel_id, file_id = request.path_params["channel"], request.path_params["file"]
        self.folders.file(channel_id, file_id).unlink(missing_ok=True)
        self.index.forget_file(channel_id, file_id)
        return JSONResponse({"message": f"deleted file ({file_id})"})

    def _entry(self, channel_id: str, file_id: str) -> Entry:
        stat = self.folders.file(channel_id, file_id).stat()
        return Entry(file_id, stat.st_size, datetime.fromtimestamp(stat.st_mtime, timezone.utc))

    def _file(self, request: Request, channel_id: str, entry: Entry) -> dict[str, Any]:
        return self._shape(request, channel_id, entry, self.index.file(channel_id, entry.name))

    def _shape(self, request: Request, channel_id: str, entry: Entry, row: FileRow | None) -> dict[str, Any]:
        """A file as ABEJA answers it; metadata values URL-quoted, as the clients decode them."""
        metadata = row.metadata if row is not None else {FILENAME: entry.name}
        path = f"/channels/{channel_id}/{entry.name}/content"
        now = time.time()
        return {
            "channel_id": channel_id,
            "file_id": entry.name,
            "content_type": _content_type(entry.name, row),
            "metadata": {quote(key): quote(value) for key, value in metadata.items()},
            "size": entry.size,
            "uploaded_at": _file_time(_uploaded(entry, row)),
            "download_uri": self.presigner.url(request, "GET", path, now),
            "url_expires_on": _file_time(datetime.fromtimestamp(now + LIFETIME_SECONDS, timezone.utc)),
        }


def _organization(request: Request) -> dict[str, Any]:
    organization = request.path_params["organization"]
    return {
        "organization_id": organization,
        "organization_name": organization,
        "created_at": None,
        "updated_at": None,
    }


def _content_type(name: str, row: FileRow | None) -> str:
    if row is not None:
        return row.content_type
    return mimetypes.guess_type(name)[0] or DEFAULT_CONTENT_TYPE


def _uploaded(entry: Entry, row: FileRow | None) -> datetime:
    return row.uploaded_at if row is not None else entry.modified


def _number(request: Request, name: str, default: int, low: int, high: int | None) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or int(raw) < low or (high is not None and int(raw) > high):
        bounds = f"from {low}" + (f" to {high}" if high is not None else "")
        raise InvalidInput(f"{name} {raw!r} must be a whole number {bounds}")
    return int(raw)


def _page_query(request: Request) -> dict[str, Any]:
    token = request.query_params.get("next_page_token")
    if token:
        try:
            query: dict[str, Any] = json.loads(base64.urlsafe_b64decode(token.encode()))
            if set(query) == {"offset", "size", "start", "end", "sort"}:
                return query
        except (ValueError, binascii.Error):
            pass
        raise InvalidInput(f"next_page_token {token!r} is not one this server answered")
    if "q" in request.query_params:
        raise InvalidInput("q (searching metadata) is not supported by inferd's DataLake")
    sort = request.query_params.get("sort", "uploaded_at")
    if sort not in ("uploaded_at", "-uploaded_at"):
        raise InvalidInput(f"sort {sort!r}: inferd sorts by 'uploaded_at' or '-uploaded_at'")
    start, end = (_day(request, name) for name in ("start", "end"))
    size = _number(request, "items_per_page", PAGE, 1, MAX_PAGE)
    return {"offset": 0, "size": size, "start": start, "end": end, "sort": sort}


def _day(request: Request, name: str) -> str | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        return datetime.strptime(raw, "%Y%m%d").strftime("%Y%m%d")
    except ValueError:
        raise InvalidInput(f"{name} {raw!r} must be a date as YYYYMMDD") from None


def _within(moment: datetime, query: dict[str, Any]) -> bool:
    day = moment.astimezone(timezone.utc).strftime("%Y%m%d")
    return (query["start"] is None or day >= query["start"]) and (query["end"] is None or day <= query["end"])


def _token(query: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(query, sort_keys=True).encode()).decode()


def _channel_time(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _file_time(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")
