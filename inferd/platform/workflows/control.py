"""A client of the control API (``inferd platform serve``), for the workflows: JSON in and out, an
error answer raised as `ControlError` with the API's own message, ``INFERD_TOKEN`` as the bearer
token (else the one a control process on this machine generated, `admin_token.local_token`). One
``httpx.Client``, so a workflow's many small calls share a connection."""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx

from inferd.platform.admin_token import HINT, local_token

DEFAULT_URL = "http://127.0.0.1:8070"
API = "/platform/v1"
#: Long enough for an endpoint switch, which returns once the old services have drained (up to 30 s).
TIMEOUT = 120.0


class ControlError(Exception):
    """An answer of 400 or more (``status``), or no answer at all (``status`` 0)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message

    def __str__(self) -> str:
        return f"HTTP {self.status}: {self.message}" if self.status else self.message


def quoted(text: str) -> str:
    return urllib.parse.quote(text, safe="")


class Control:
    """The control API at ``url`` (its root, without ``/platform/v1``)."""

    def __init__(self, url: str = DEFAULT_URL, token: str | None = None, timeout: float = TIMEOUT) -> None:
        self.url = url.rstrip("/").removesuffix(API)
        if token is None:
            token = os.environ.get("INFERD_TOKEN") or local_token(self.url)
        headers = {"accept": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        self.http = httpx.Client(base_url=self.url + API, headers=headers, timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Control:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, method: str, path: str, body: Any = None, **options: Any) -> Any:
        """The JSON answer of one request (None for an empty one)."""
        try:
            answer = self.http.request(method, path, json=body, **options)
        except httpx.HTTPError as exc:
            raise ControlError(0, f"cannot reach the control API at {self.url}: {exc}") from None
        if answer.status_code == 401:
            raise ControlError(401, f"{_said(answer)}; {HINT}")
        if answer.status_code >= 400:
            raise ControlError(answer.status_code, _said(answer))
        return answer.json() if answer.content else None

    def find(self, path: str) -> Any:
        """The record at ``path``, or None when it does not exist (404)."""
        try:
            return self.call("GET", path)
        except ControlError as exc:
            if exc.status == 404:
                return None
            raise

    # ---- the records the workflows use

    def deployment(self, name: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.find(f"/deployments/{quoted(name)}")
        return found

    def ensure_deployment(self, name: str, description: str) -> dict[str, Any]:
        found = self.deployment(name)
        if found is not None:
            return found
        created: dict[str, Any] = self.call(
            "POST", "/deployments", {"name": name, "description": description}
        )
        return created

    def versions(self, deployment: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.call("GET", f"/deployments/{quoted(deployment)}/versions")
        return found

    def push(
        self,
        deployment: str,
        archive: Path,
        label: str,
        target: str,
        dialect: str,
        environment: Mapping[str, str],
    ) -> dict[str, Any]:
        fields = {
            "label": label,
            "target": target,
            "dialect": dialect,
            "environment": json.dumps(dict(environment)),
        }
        with archive.open("rb") as file:
            pushed: dict[str, Any] = self.call(
                "POST",
                f"/deployments/{quoted(deployment)}/versions",
                data=fields,
                files={"archive": (archive.name, file, "application/gzip")},
            )
        return pushed

    def services(self, deployment: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.call("GET", f"/deployments/{quoted(deployment)}/services")
        return found

    def service(self, service_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.call("GET", f"/services/{quoted(service_id)}")
        return found

    def endpoints(self, deployment: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.call("GET", f"/deployments/{quoted(deployment)}/endpoints")
        return found

    def endpoint(self, deployment: str, name: str) -> dict[str, Any] | None:
        return next((found for found in self.endpoints(deployment) if found["name"] == name), None)

    def metrics(self, service_id: str) -> dict[str, Any] | None:
        """What the service's ``/metrics`` says (requests, errors, latency), None when it cannot tell."""
        try:
            found: dict[str, Any] = self.call("GET", f"/services/{quoted(service_id)}/metrics")
        except ControlError:
            return None
        return found

    def follow(self, service_id: str, lines: int = 20) -> Iterator[str]:
        """The last ``lines`` lines of a service's log, then every new one as it is written, until the
        service stops (the stream ends) or the caller stops iterating."""
        path = f"/services/{quoted(service_id)}/logs/follow"
        try:
            with self.http.stream("GET", path, params={"lines": lines}, timeout=None) as answer:
                if answer.status_code >= 400:
                    answer.read()
                    raise ControlError(answer.status_code, _said(answer))
                yield from answer.iter_lines()
        except httpx.HTTPError as exc:
            raise ControlError(0, f"the log stream of {service_id} ended: {exc}") from None


def _said(answer: httpx.Response) -> str:
    try:
        found = answer.json()
    except ValueError:
        return answer.text.strip() or answer.reason_phrase
    return str(found.get("error", found)) if isinstance(found, dict) else str(found)
