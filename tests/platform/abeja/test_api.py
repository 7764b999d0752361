"""The ABEJA-compatible API over HTTP: its credentials (Basic with the token as password, presigned
upload URLs), its error body, and bad requests that change nothing."""

from __future__ import annotations

import base64
import io
import tarfile
from urllib.parse import urlsplit

import pytest

from tests.platform.abeja.conftest import TOKEN, Control

ORG = "/organizations/2345678901234"


@pytest.fixture(scope="module")
def running(shared_control: Control) -> Control:
    assert shared_control.call("POST", f"{ORG}/deployments", json={"name": "api"}).status_code == 200
    return shared_control


def basic(user: str, token: str) -> dict[str, str]:
    return {"authorization": "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()}


def archive_with(name: str, content: bytes = b"x") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        member = tarfile.TarInfo(name)
        member.size = len(content)
        tar.addfile(member, io.BytesIO(content))
    return buffer.getvalue()


def test_credentials(running: Control) -> None:
    assert running.call("GET", f"{ORG}/deployments", token=None).status_code == 401
    wrong = running.call("GET", f"{ORG}/deployments", token=None, headers=basic("1", "nope"))
    assert wrong.status_code == 401
    right = running.call("GET", f"{ORG}/deployments", token=None, headers=basic("1234567890123", TOKEN))
    assert right.status_code == 200 and [d["name"] for d in right.json()["entries"]] == ["api"]
    # Basic is ABEJA's: the control API keeps to bearer tokens
    assert (
        running.call("GET", "/platform/v1/deployments", token=None, headers=basic("1", TOKEN)).status_code
        == 401
    )


def test_unknown_records_are_404_in_abeja_shape(running: Control) -> None:
    for path in (
        f"{ORG}/deployments/nope",
        f"{ORG}/deployments/api/versions/ver-000000000000",
        f"{ORG}/deployments/api/services/svc-000000000000",
        f"{ORG}/deployments/api/endpoints/end-000000000000",
    ):
        answer = running.call("GET", path)
        assert answer.status_code == 404, path
        assert answer.json()["error"] == "not_found" and answer.json()["error_description"], answer.text
    missing = running.call("POST", f"{ORG}/deployments/api/services", json={"version_id": "ver-000000000000"})
    assert missing.status_code == 404 and "ver-000000000000" in missing.json()["error_description"]
    nowhere = running.call("POST", "/deployments/api", json={"a": 1}, headers={"host": "org.localhost"})
    assert nowhere.status_code == 404 and "default" in nowhere.json()["error_description"]


def test_hostile_archive_is_400_and_the_version_stays_pending(running: Control) -> None:
    created = running.call("POST", f"{ORG}/deployments/api/versions", json={"version": "1.0.0"})
    assert created.status_code == 200, created.text
    upload = urlsplit(created.json()["upload_url"])
    target = f"{upload.path}?{upload.query}"
    hostile = running.call("PUT", target, token=None, content=archive_with("../evil.py"))
    assert hostile.status_code == 400 and "evil.py" in hostile.json()["error_description"]
    assert running.call("GET", f"{ORG}/deployments/api/versions").json()["entries"] == []
    forged = running.call("PUT", upload.path + "?expires=9999999999&signature=00", token=None, content=b"x")
    assert forged.status_code == 401
    good = running.call(
        "PUT", target, token=None, content=archive_with("main.py", b"def handler(r, c): pass\n")
    )
    assert good.status_code == 200, good.text
    again = running.call("PUT", target, token=None, content=archive_with("main.py"))
    assert again.status_code == 409
    (version,) = running.call("GET", f"{ORG}/deployments/api/versions").json()["entries"]
    assert version["version_id"] == created.json()["version_id"] and version["version"] == "1.0.0"
    clash = running.call("POST", f"{ORG}/deployments/api/versions", json={"version": "1.0.0"})
    assert clash.status_code == 409 and clash.json()["error"] == "conflict"


def test_bad_bodies_and_origins(running: Control) -> None:
    bad_env = running.call(
        "POST", f"{ORG}/deployments", json={"name": "x", "default_environment": {"1A": "v"}}
    )
    assert bad_env.status_code == 400 and bad_env.json()["error"] == "bad_request"
    bad_name = running.call("POST", f"{ORG}/deployments", json={"name": "has space"})
    assert bad_name.status_code == 400
    bad_handler = running.call(
        "POST", f"{ORG}/deployments/api/versions", json={"version": "2", "handler": "main"}
    )
    assert bad_handler.status_code == 400 and "module:function" in bad_handler.json()["error_description"]
    foreign = running.call(
        "POST", f"{ORG}/deployments", json={"name": "y"}, headers={"origin": "http://evil.example"}
    )
    assert foreign.status_code == 403
    names = [d["name"] for d in running.call("GET", f"{ORG}/deployments").json()["entries"]]
    assert names == ["api"]


@pytest.mark.parametrize("path", ["git", "git/versions"])
def test_git_versions_are_501(running: Control, path: str) -> None:
    answer = running.call("POST", f"{ORG}/deployments/api/{path}", json={})
    assert answer.status_code == 501 and answer.json()["error"] == "not_implemented"
