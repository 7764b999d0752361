"""What the small benchmark scripts share: start ``inferd serve`` on a free port, and one wrk run."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LUA = ROOT / "bench" / "v2_iris.lua"
INFERD = ROOT / ".venv" / "bin" / "inferd"
READY = re.compile(r"inferd ready: http://(\S+?) ")
RESULT = re.compile(r"^V2_IRIS_RESULT (\{.*\})$", re.MULTILINE)


def start_inferd(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    inferd: tuple[str, ...] = (str(INFERD),),
) -> tuple[subprocess.Popen[str], str]:
    """``inferd serve ARGS`` on a free port (its own session, for os.killpg) and its base URL; ``env``:
    its whole environment (default: ours); ``inferd``: the command (default: the installed one)."""
    command = [*inferd, "serve", *args, "--port", "0", "--no-grpc", "--log-level", "warning"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, start_new_session=True, cwd=cwd, env=env
    )
    assert process.stdout is not None
    for line in process.stdout:
        match = READY.search(line)
        if match:
            return process, f"http://{match.group(1)}"
    raise SystemExit(f"inferd exited with {process.wait()} before it was ready")


def wrk(url: str, body: str, concurrency: int, seconds: int) -> float:
    """Requests per second of one wrk run; any non-2xx answer or socket error aborts the benchmark."""
    threads = 1 if concurrency == 1 else 2
    command = ["wrk", f"-t{threads}", f"-c{concurrency}", f"-d{seconds}s", "-s", str(LUA), url]
    done = subprocess.run(
        command, capture_output=True, text=True, env={**os.environ, "V2_IRIS_BODY": body}, check=True
    )
    match = RESULT.search(done.stdout)
    assert match is not None, done.stdout
    raw = json.loads(match.group(1))
    failures = (
        raw["non_2xx"] + raw["connect_errors"] + raw["read_errors"] + raw["write_errors"] + raw["timeouts"]
    )
    if failures:
        raise SystemExit(f"{url}: {failures} failed requests")
    return float(raw["requests"] / (raw["duration_us"] / 1e6))
