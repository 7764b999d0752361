"""ABEJA's Dataset API: the routes ``abeja dataset ...`` (abejacli) and the SDK's ``abeja.datasets``
client call, under ``/organizations/{o}/datasets``, over `DatasetStore`.

The shapes are what those clients read. A dataset answers ``organization_id``, ``dataset_id``,
``name``, ``type``, ``props``, ``total_count`` and its times (the SDK builds its ``Dataset`` from
them); the list of datasets is a JSON list. An item answers ``dataset_id``, ``dataset_item_id`` (a
number), ``source_data`` and ``attributes`` and its times, and no ``organization_id``: the SDK passes
that itself beside the answer's fields, and would fail on a second one.

Items are listed a page at a time, ``limit`` at once (100, at most 1000), with a ``next_page_token``
on every page that has items and ``null`` on the first empty one: the SDK reads pages until one is
empty (it starts over from the first when a page has items and no token), the CLI until the token is
``null``. ``import-from-datalake`` is the CLI's own: it lists the channel's files and posts their
items (``datalake://CHANNEL/FILE``, the files' ``label``/``label_id`` metadata as attributes) in
batches, as a JSON list, to ``POST .../items``.

Bodies stay within the control API's limit (``INFERD_MAX_API_BODY_SIZE``); an item's ``source_data``
and ``attributes`` within `MAX_ITEM_BYTES` together; a batch within `MAX_BATCH` items. A
``data_uri`` must be one the SDK can read (``datalake://``, ``http://``, ``https://``): another
would break every listing of the dataset in the SDK.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlparse

from pydantic import Field, TypeAdapter, ValidationError, field_validator
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from inferd.core.errors import InvalidInput, PayloadTooLarge
from inferd.platform.abeja.bodies import Body
from inferd.platform.abeja.datasets_store import DatasetRow, DatasetStore, ItemRow, NewItem, item_number
from inferd.platform.abeja.shapes import time_text
from inferd.protocols.control import ControlRoute

Handler = Callable[[Request], Awaitable[Response]]
#: The JSON of one item's ``source_data`` and ``attributes`` together, at most (bytes).
MAX_ITEM_BYTES = 64 * 1024
#: Items one request adds or changes, at most (abejacli's import posts 500 at a time).
MAX_BATCH = 1000
#: Items a page lists unless ``limit`` says otherwise, and at most; datasets a list answers, at most.
PAGE, MAX_PAGE = 100, 1000
#: The ``data_uri`` schemes the SDK reads (`abeja.common.file_factory`).
URI_SCHEMES = ("datalake", "http", "https")


class NewDataset(Body):
    name: str = Field(min_length=1, max_length=255)
    type: str = Field(min_length=1, max_length=64)
    props: dict[str, Any] = Field(default_factory=dict)


class ItemBody(Body):
    """One item: where its data is (``source_data``, each entry kept whole: ``height``, ``width``...)
    and its annotations (``attributes``)."""

    source_data: list[dict[str, Any]] = Field(min_length=1, max_length=64)
    attributes: dict[str, Any] | None = None

    @field_validator("source_data")
    @classmethod
    def _readable(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for entry in value:
            uri = entry.get("data_uri")
            if not isinstance(uri, str) or urlparse(uri).scheme not in URI_SCHEMES:
                raise ValueError(f"data_uri {uri!r} must be datalake://CHANNEL/FILE or an http(s) URL")
            if not isinstance(entry.get("data_type", ""), str | None):
                raise ValueError("data_type must be a content type, e.g. image/jpeg")
        return value


class AttributesBody(Body):
    attributes: dict[str, Any] | None = None


class ItemChange(Body):
    dataset_item_id: int = Field(ge=0)
    attributes: dict[str, Any] | None = None


_ONE_OR_MANY: TypeAdapter[ItemBody | list[ItemBody]] = TypeAdapter(ItemBody | list[ItemBody])
_CHANGES: TypeAdapter[list[ItemChange]] = TypeAdapter(list[ItemChange])


class DatasetsAPI:
    def __init__(self, store: DatasetStore) -> None:
        self.store = store

    # ---- datasets ----

    async def list_datasets(self, request: Request) -> Response:
        """A JSON list, as the SDK reads it: ``max_results`` of them (at most 1000) by id, those after
        the id ``next_token`` names when given."""
        limit = _number(request, "max_results", MAX_PAGE, 1, MAX_PAGE)
        after = request.query_params.get("next_token")
        rows = self.store.datasets(after, limit)
        return JSONResponse([_dataset(request, row) for row in rows])

    async def create_dataset(self, request: Request) -> Response:
        body: NewDataset = _validated(TypeAdapter(NewDataset), await request.body())
        row = self.store.create(body.name, body.type, body.props)
        return JSONResponse(_dataset(request, row))

    async def dataset(self, request: Request) -> Response:
        return JSONResponse(_dataset(request, self.store.dataset(request.path_params["dataset"])))

    async def delete_dataset(self, request: Request) -> Response:
        return JSONResponse(_dataset(request, self.store.delete(request.path_params["dataset"])))

    # ---- items ----

    async def list_items(self, request: Request) -> Response:
        dataset_id = request.path_params["dataset"]
        if "q" in request.query_params:
            raise InvalidInput("q (searching items) is not supported by inferd's datasets")
        after, limit = _page(request)
        dataset = self.store.dataset(dataset_id)
        rows = self.store.items(dataset_id, after, limit)
        token = _token(rows[-1].item_id, limit) if rows else None
        items = [_item(row) for row in rows]
        return JSONResponse({"items": items, "next_page_token": token, "total_count": dataset.total_count})

    async def create_items(self, request: Request) -> Response:
        """One item (an object: answers the item) or a batch (a list: answers the list)."""
        dataset_id = request.path_params["dataset"]
        given = _validated(_ONE_OR_MANY, await request.body())
        batch = given if isinstance(given, list) else [given]
        if len(batch) > MAX_BATCH:
            raise InvalidInput(f"{len(batch)} items in one request: at most {MAX_BATCH}")
        items = [_new_item(index, body) for index, body in enumerate(batch)]
        made = [_item(row) for row in self.store.add_items(dataset_id, items)]
        return JSONResponse(made if isinstance(given, list) else made[0])

    async def item(self, request: Request) -> Response:
        dataset_id, item_id = _item_of(request)
        return JSONResponse(_item(self.store.item(dataset_id, item_id)))

    async def update_item(self, request: Request) -> Response:
        dataset_id, item_id = _item_of(request)
        body: AttributesBody = _validated(TypeAdapter(AttributesBody), await request.body())
        attributes = _bounded(0, [], body.attributes or {})
        return JSONResponse(_item(self.store.set_attributes(dataset_id, [(item_id, attributes)])[0]))

    async def update_items(self, request: Request) -> Response:
        """``bulk_update``: ``[{"dataset_item_id": N, "attributes": {...}}, ...]``, all or none."""
        dataset_id = request.path_params["dataset"]
        changes = _validated(_CHANGES, await request.body())
        if len(changes) > MAX_BATCH:
            raise InvalidInput(f"{len(changes)} items in one request: at most {MAX_BATCH}")
        pairs = [
            (item_number(str(c.dataset_item_id)), _bounded(i, [], c.attributes or {}))
            for i, c in enumerate(changes)
        ]
        return JSONResponse([_item(row) for row in self.store.set_attributes(dataset_id, pairs)])

    async def delete_item(self, request: Request) -> Response:
        dataset_id, item_id = _item_of(request)
        return JSONResponse(_item(self.store.delete_item(dataset_id, item_id)))


def _dataset(request: Request, row: DatasetRow) -> dict[str, Any]:
    return {
        "organization_id": request.path_params["organization"],
        "dataset_id": row.dataset_id,
        "name": row.name,
        "type": row.type,
        "props": row.props,
        "total_count": row.total_count,
        "created_at": time_text(row.created_at),
        "updated_at": time_text(row.updated_at),
    }


def _item(row: ItemRow) -> dict[str, Any]:
    return {
        "dataset_id": row.dataset_id,
        "dataset_item_id": row.item_id,
        "source_data": row.source_data,
        "attributes": row.attributes,
        "created_at": time_text(row.created_at),
        "updated_at": time_text(row.updated_at),
    }


def _item_of(request: Request) -> tuple[str, int]:
    return request.path_params["dataset"], item_number(request.path_params["item"])


def _new_item(index: int, body: ItemBody) -> NewItem:
    attributes = _bounded(index, body.source_data, body.attributes or {})
    return NewItem(body.source_data, attributes)


def _bounded(index: int, source_data: list[Any], attributes: dict[str, Any]) -> dict[str, Any]:
    size = len(json.dumps(source_data, ensure_ascii=False).encode()) + len(
        json.dumps(attributes, ensure_ascii=False).encode()
    )
    if size > MAX_ITEM_BYTES:
        raise PayloadTooLarge(
            f"item {index}: its source_data and attributes are {size} bytes of JSON, "
            f"more than the {MAX_ITEM_BYTES} an item may hold"
        )
    return attributes


def _validated(adapter: TypeAdapter[Any], raw: bytes) -> Any:
    try:
        return adapter.validate_json(raw or b"{}")
    except ValidationError as exc:
        said = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors(include_url=False)[:5]
        )
        raise InvalidInput(f"invalid request body: {said}") from None


def _number(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isascii() or not raw.isdigit() or len(raw) > 9 or not low <= int(raw) <= high:
        raise InvalidInput(f"{name} {raw[:40]!r} must be a whole number from {low} to {high}")
    return int(raw)


def _page(request: Request) -> tuple[int, int]:
    """Where a page starts (after which item) and how many it holds: ``next_page_token`` carries
    both on, ``limit`` (given again, as the SDK does) overrides its size."""
    token = request.query_params.get("next_page_token")
    after, limit = 0, PAGE
    if token:
        try:
            said = json.loads(base64.urlsafe_b64decode(token[:200].encode()))
            after, limit = int(said["after"]), int(said["limit"])
            if not (0 <= after < 2**63 and 1 <= limit <= MAX_PAGE) or len(token) > 200:
                raise ValueError(token)
        except (ValueError, KeyError, TypeError, binascii.Error):
            raise InvalidInput(f"next_page_token {token[:40]!r} is not one this server answered") from None
    if "limit" in request.query_params:
        limit = _number(request, "limit", PAGE, 1, MAX_PAGE)
    return after, limit


def _token(after: int, limit: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": after, "limit": limit}).encode()).decode()


def dataset_routes(api: DatasetsAPI, prefix: str, wrap: Callable[[Handler], Handler]) -> list[BaseRoute]:
    """The routes under ``prefix`` (the organization's), each handler given to ``wrap`` (ABEJA's error
    body); a route that changes state is a `ControlRoute`. Bodies take the control API's limit."""
    d = "/datasets/{dataset}"
    table: list[tuple[str, str, Handler]] = [
        ("/datasets", "GET", api.list_datasets),
        ("/datasets", "POST", api.create_dataset),
        (d, "GET", api.dataset),
        (d, "DELETE", api.delete_dataset),
        (f"{d}/items", "GET", api.list_items),
        (f"{d}/items", "POST", api.create_items),
        (f"{d}/items", "PUT", api.update_items),
        (f"{d}/items/{{item}}", "GET", api.item),
        (f"{d}/items/{{item}}", "PUT", api.update_item),
        (f"{d}/items/{{item}}", "DELETE", api.delete_item),
    ]
    return [
        (Route if method == "GET" else ControlRoute)(prefix + path, wrap(handler), methods=[method])
        for path, method, handler in table
    ]
