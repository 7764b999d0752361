"""The platform's quick start as a user types it in an 80-column terminal (issue 43 items 7 and 10):
ids are whole in ``inferd platform services`` and ``inferd get`` (they were cut to ``svc-…`` and
``ver-e33…``), the verbs that take ids take a unique beginning of one (several matches are refused
naming them, none as an unknown id), ``inferd platform route`` prints the endpoint's URL on the
gateway (which answers there), and ``inferd get`` with nothing deployed says so and how to begin
instead of printing an empty table.

The table commands run in a pseudo-terminal of 80 columns (``COLUMNS=80``), as in a terminal: into a
pipe the tables are as wide as they need."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import termios
from pathlib import Path

import httpx
from rich.cells import cell_len

from tests.platform.control import Control, control
from tests.platform.test_control import REQUEST, project, wait_state
from tests.servers import ROOT, inferd_command

ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
WIDTH = 80


def in_terminal(running: Control, *args: str) -> tuple[int, str, str]:
    """``inferd ARGS --url ...`` with stdout a terminal of `WIDTH` columns: its exit code, what it
    showed there (colours and carriage returns taken out) and its stderr."""
    main, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, WIDTH, 0, 0))
    env = {**running.cli_env(), "COLUMNS": str(WIDTH), "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    process = subprocess.Popen(
        inferd_command(*args, "--url", running.base),
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the terminal's other end closed: the command has ended
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    assert process.stderr is not None
    errors = process.stderr.read().decode()
    process.stderr.close()
    code = process.wait(timeout=60)
    return code, ESCAPES.sub("", shown.decode()).replace("\r", ""), errors


def fits(shown: str) -> None:
    """Every line within the terminal, nothing cut short."""
    assert "…" not in shown, shown
    assert all(cell_len(line) <= WIDTH for line in shown.splitlines()), shown


def test_whole_ids_prefixes_and_the_endpoint_url_at_80_columns(tmp_path: Path) -> None:
    with control(tmp_path / "data") as running:
        code, shown, errors = in_terminal(running, "get")
        assert code == 0, errors
        assert shown.startswith("No deployments yet.") and "inferd deploy" in shown, shown
        assert "name" not in shown  # no empty table
        empty = subprocess.run(
            inferd_command("get", "--url", running.base, "--json"),
            capture_output=True,
            text=True,
            env=running.cli_env(),
            cwd=ROOT,
            timeout=60,
        )
        assert json.loads(empty.stdout) == []  # scripts keep their empty list

        assert running.verb("create-deployment", "iris").returncode == 0
        pushed = running.verb(
            "push", "iris", str(project(tmp_path / "scale", 2.0)), "--label", "1.0", "--json"
        )
        version = json.loads(pushed.stdout)["id"]
        services = []
        for _ in range(2):  # the version named by its beginning, without "ver-"
            started = running.verb("start", "iris", version.removeprefix("ver-")[:5], "--json")
            assert started.returncode == 0, started.stderr
            services.append(json.loads(started.stdout)["id"])
        for service in services:
            wait_state(running, service, "running")
        first, second = services

        code, shown, errors = in_terminal(running, "platform", "services", "iris")
        assert code == 0, errors
        fits(shown)
        assert first in shown and second in shown and shown.count(version) == 2, shown
        assert "running" in shown and "1/1" in shown

        # the shortest beginnings that tell the two apart, with "svc-" and without
        length = next(n for n in range(1, 13) if first[4 : 4 + n] != second[4 : 4 + n])
        one, other = first[: 4 + length], second[4 : 4 + length]
        routed = running.verb("route", "iris", "main", f"{one}=100")
        assert routed.returncode == 0, routed.stderr
        url = f"{running.gateway}/e/main/"
        assert routed.stdout.rstrip().endswith(f'endpoint "main": {url}'), routed.stdout
        assert json.loads(running.call("GET", "/deployments/iris/endpoints").text)[0]["routes"] == [
            {"service_id": first, "weight": 100}
        ]
        answered = httpx.post(f"{url}v2/models/scale/infer", json=REQUEST, timeout=30)
        assert answered.status_code == 200 and answered.json()["outputs"][0]["data"] == [2.0]

        logs = running.verb("logs", one)
        assert logs.returncode == 0 and "inferd ready" in logs.stdout, logs.stderr

        ambiguous = running.verb("stop", "svc-")
        assert ambiguous.returncode == 2
        said = " ".join(ambiguous.stderr.split())
        assert "'svc-' begins the ids of 2 services" in said and first in said and second in said, said
        unknown = running.verb("stop", "svc-zz")
        assert unknown.returncode == 1 and "no service whose id begins with 'svc-zz'" in unknown.stderr
        assert running.call("GET", f"/services/{second}").json()["state"] == "running"  # untouched

        code, shown, errors = in_terminal(running, "get", "iris")
        assert code == 0, errors
        fits(shown)
        assert first in shown and second in shown, shown  # its versions by their labels here
        assert "running" in shown and "100" in shown
        code, shown, errors = in_terminal(running, "get")
        assert code == 0, errors
        fits(shown)
        assert "iris" in shown and "/e/main/" in shown, shown

        assert running.verb("stop", other).returncode == 0
        assert running.call("GET", f"/services/{second}").json()["state"] == "stopped"
        assert running.verb("delete-service", other).returncode == 0
        assert running.call("GET", f"/services/{second}").status_code == 404
        [endpoint] = running.call("GET", "/deployments/iris/endpoints").json()
        assert running.call("DELETE", f"/endpoints/{endpoint['id']}").status_code == 204
        assert running.verb("stop", one).returncode == 0
