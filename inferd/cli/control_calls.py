"""Requests of the ``inferd platform`` verbs to the control API: the one place that adds its bearer
token (``INFERD_TOKEN``, else the one a control process on this machine generated) and turns an
error answer into the command's end. Beside `inferd.cli.platform` so the helpers that verbs share
(`inferd.cli.platform_ids`) call the API without importing the verbs."""

from __future__ import annotations

import json
import os
import urllib.parse
from pathlib import Path
from typing import Any

from inferd.cli.common import fail

API = "/platform/v1"


def _call(
    url: str,
    method: str,
    path: str,
    body: Any = None,
    form: tuple[list[tuple[str, str]], Path] | None = None,
    prefix: str = API,
) -> Any:
    """One request to the control API (``prefix``: its path, "" for the console's); an error
    answer ends the command with its message."""
    from inferd import client
    from inferd.platform.admin_token import HINT, local_token

    headers = {"accept": "application/json"}
    token = os.environ.get("INFERD_TOKEN") or local_token(url)
    if token:
        headers["authorization"] = f"Bearer {token}"
    content = None
    if body is not None:
        content, headers["content-type"] = json.dumps(body).encode(), "application/json"
    if form is not None:
        fields, archive = form
        content, headers["content-type"] = client.multipart(fields, {"archive": archive})
    try:
        answer = client.send(url, client.Request(method, prefix + path, headers, content))
    except client.ClientError as exc:
        fail(str(exc), code=1)
    if answer.status >= 400:
        said = answer.json().get("error") if answer.is_json else answer.body.decode("utf-8", "replace")
        fail(f"HTTP {answer.status}: {said}", code=1, instead=HINT if answer.status == 401 else None)
    return answer.json() if answer.body and answer.is_json else None


def _quoted(text: str) -> str:
    return urllib.parse.quote(text, safe="")
