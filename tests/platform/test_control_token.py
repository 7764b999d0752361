"""The control API is not open to every local process by default: a control process started without
INFERD_AUTH_TOKENS generates a token, keeps it for its user alone (0600) and takes it again after a
restart; the ``inferd`` CLI finds it by itself; ``--host`` beyond loopback wants tokens of one's own;
``INFERD_PLATFORM_OPEN=1`` is the explicit way to run open."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

import grpc
import httpx
import pytest

from tests.platform.control import control
from tests.servers import ROOT, inferd_command, with_this_tree

ABEJA_DEPLOYMENTS = "/organizations/1234567890123/deployments"


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def test_a_control_started_without_tokens_makes_one_keeps_it_and_the_cli_finds_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with control(data) as running:
        token = running.token
        assert token and len(token) >= 40
        kept = data / "platform" / "control-token"
        assert kept.read_text().strip() == token and kept.stat().st_mode & 0o777 == 0o600
        # no process without it gets anything: the API, the console's data, the ABEJA API, /metrics
        base = running.base
        for method, path in (
            ("GET", "/platform/v1/deployments"),
            ("POST", "/platform/v1/deployments"),
            ("GET", "/console/api/info"),
            ("GET", ABEJA_DEPLOYMENTS),
            ("GET", "/metrics"),
        ):
            refused = httpx.request(method, base + path, json={"name": "x"}, timeout=30)
            assert refused.status_code == 401, (path, refused.text)
            assert "bearer token" in refused.json()["error"]
            wrong = httpx.request(method, base + path, headers={"authorization": "Bearer nope"}, timeout=30)
            assert wrong.status_code == 401, (path, wrong.text)
        assert running.call("GET", "/deployments").json() == []
        # ABEJA's clients send the token as a personal access token (HTTP Basic's password)
        basic = base64.b64encode(f"1234567890123:{token}".encode()).decode()
        abeja = httpx.get(base + ABEJA_DEPLOYMENTS, headers={"authorization": f"Basic {basic}"}, timeout=30)
        assert abeja.status_code == 200, abeja.text

        # the CLI, never told the token: by the runtime record of the port it calls...
        record = running.runtime / f"platform-{running.base.rsplit(':', 1)[1]}.json"
        assert record.stat().st_mode & 0o777 == 0o600 and token not in record.read_text()
        assert json.loads(record.read_text())["token_file"] == str(kept.resolve())
        created = running.verb("create-deployment", "iris")
        assert created.returncode == 0, created.stderr
        listed = subprocess.run(
            inferd_command("get", "--url", base, "--json"),
            capture_output=True,
            text=True,
            timeout=120,
            env=running.cli_env(),
            cwd=ROOT,
        )
        assert listed.returncode == 0 and "iris" in listed.stdout, listed.stderr
        # ...or in the data folder it is run from (`.inferd` there, or INFERD_DATA_DIR)
        elsewhere = with_this_tree({"INFERD_RUNTIME_DIR": str(tmp_path / "nothing"), "HOME": str(tmp_path)})
        by_folder = {**elsewhere, "INFERD_DATA_DIR": str(data)}
        found = subprocess.run(
            inferd_command("platform", "deployments", "--url", base, "--json"),
            capture_output=True,
            text=True,
            timeout=120,
            env=by_folder,
            cwd=ROOT,
        )
        assert found.returncode == 0 and json.loads(found.stdout)[0]["name"] == "iris", found.stderr
        # with no way to find it: the 401, and what to do
        lost = subprocess.run(
            inferd_command("platform", "deployments", "--url", base),
            capture_output=True,
            text=True,
            timeout=120,
            env=elsewhere,
            cwd=tmp_path,
        )
        assert lost.returncode == 1 and "HTTP 401" in lost.stderr and "INFERD_TOKEN" in lost.stderr
        # guessing it: ten wrong tokens are refused 401 (five were "nope" above), the next ones 429,
        # and the right one still answers
        guesses = [running.call("GET", "/deployments", headers=bearer(f"guess-{n}")) for n in range(7)]
        assert [answer.status_code for answer in guesses] == [401] * 5 + [429] * 2
        assert int(guesses[-1].headers["retry-after"]) >= 1
        assert running.call("GET", "/deployments").status_code == 200
    assert list(running.runtime.iterdir()) == []  # its record went with it, no scratch file left
    assert sorted(path.name for path in (data / "platform").glob("*control-token*")) == ["control-token"]

    with control(data) as again:  # a restart takes the same token
        assert again.token == token
        assert again.call("GET", "/deployments").json()[0]["name"] == "iris"
        assert again.verb("deployments", "--json").returncode == 0


def test_the_token_file_is_made_private_again_and_an_empty_one_replaced(tmp_path: Path) -> None:
    kept = tmp_path / "data" / "platform" / "control-token"
    kept.parent.mkdir(parents=True)
    kept.write_text("")
    with control(tmp_path / "data") as running:
        assert running.token and kept.read_text().strip() == running.token
    kept.chmod(0o644)
    with control(tmp_path / "data") as again:
        assert again.token == running.token and kept.stat().st_mode & 0o777 == 0o600


def serve_refused(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = inferd_command(
        "platform",
        "serve",
        "--port",
        "0",
        "--gateway-port",
        "0",
        "--grpc-gateway-port",
        "0",
        "--data-dir",
        str(tmp_path / "data"),
        *args,
    )
    environment = with_this_tree(
        {**os.environ, "INFERD_RUNTIME_DIR": str(tmp_path / "runtime"), **(env or {})}
    )
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=environment, cwd=tmp_path)


def test_beyond_loopback_the_control_process_wants_tokens_of_its_own(tmp_path: Path) -> None:
    for args, env in (
        (("--host", "0.0.0.0"), {}),
        (("--host", "192.0.2.1"), {}),
        (("--host", "0.0.0.0", "--no-token"), {}),
        (("--host", "::"), {"INFERD_PLATFORM_OPEN": "1"}),
    ):
        refused = serve_refused(tmp_path, *args, env=env)
        assert refused.returncode == 2, (args, refused.stdout, refused.stderr)
        assert "is not a loopback address" in refused.stderr and "INFERD_AUTH_TOKENS" in refused.stderr
        assert "inferd platform ready" not in refused.stdout
    assert not (tmp_path / "data").exists() and not (tmp_path / "runtime").exists()  # nothing written


def test_run_open_only_when_asked(tmp_path: Path) -> None:
    with control(tmp_path / "data", env={"INFERD_PLATFORM_OPEN": "1"}) as running:
        assert running.token is None
        assert httpx.get(f"{running.api}/deployments", timeout=30).status_code == 200
        assert running.verb("create-deployment", "iris").returncode == 0
    assert not (tmp_path / "data" / "platform" / "control-token").exists()
    with control(tmp_path / "data", env={"INFERD_AUTH_TOKENS": "mine"}) as running:  # its own tokens
        assert running.token is None
        assert httpx.get(f"{running.api}/deployments", timeout=30).status_code == 401
        mine = httpx.get(f"{running.api}/deployments", headers={"authorization": "Bearer mine"}, timeout=30)
        assert mine.status_code == 200
        # the gRPC gateway takes those tokens, and slows guesses of them as the HTTP side does
        with grpc.insecure_channel(running.grpc) as channel:
            call = channel.unary_unary("/inference.GRPCInferenceService/ServerLive")
            codes = []
            for n in range(11):
                with pytest.raises(grpc.RpcError) as refused:
                    call(b"", metadata=[("authorization", f"Bearer guess-{n}")], timeout=10)
                codes.append(refused.value.code())
            assert codes == [grpc.StatusCode.UNAUTHENTICATED] * 10 + [grpc.StatusCode.RESOURCE_EXHAUSTED]
            with pytest.raises(grpc.RpcError) as routed:  # the right token gets past: no endpoint
                call(b"", metadata=[("authorization", "Bearer mine")], timeout=10)
            assert routed.value.code() == grpc.StatusCode.NOT_FOUND
    assert not (tmp_path / "data" / "platform" / "control-token").exists()
