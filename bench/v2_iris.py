"""The V2 iris benchmark (issues 2 and 7): inferd against a bare Starlette floor and MLServer 1.7,
and the machinery bench/all.py runs every peer with (``ServerSpec`` rows, each with its ``Protocol``).

inferd runs with 1 worker, 2 workers, and 2 workers with adaptive batching (``BATCHING``); the floor
and MLServer (in-process, and with 2 inference workers) never batch.

Starts each server in turn on free loopback ports, checks that it answers the iris request correctly,
then loads it with wrk at each concurrency (a warm-up run, then a measured run) and prints one table
of req/s, p50 and p99 latency, server CPU per request and peak RSS (of the server's process tree),
with ratios against the floor and the matching inferd row, inferd's ratio to each peer, and the
issues' targets as PASS/FAIL; the report is also written, with the machine, to
bench/results/v2-iris-<date>-<time>.txt. Not part of CI; see bench/README.md.

    .venv/bin/python bench/v2_iris.py [--only inferd,floor,mlserver] [--duration 10s] [--warmup 3s]
                                      [--concurrency 1,16,64] [--rounds 1] [--json results.json]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import io
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from types import FrameType
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
VENV_BIN = Path(sys.prefix) / "bin"
EXAMPLE = ROOT / "examples" / "iris"
MODEL_PATH = EXAMPLE / "model.joblib"
LUA_SCRIPT = BENCH / "v2_iris.lua"
MLSERVER_ENV = BENCH / ".envs" / "mlserver"
MLSERVER_REQUIREMENTS = ("mlserver>=1.7,<1.8", "mlserver-sklearn>=1.7,<1.8", "uvloop<0.22")

HOST = "127.0.0.1"
INFER_PATH = "/v2/models/iris/infer"
READY_PATH = "/v2/health/ready"
FEATURES = [[5.1, 3.5, 1.4, 0.2]]
BODY = json.dumps(
    {"inputs": [{"name": "input-0", "shape": [1, 4], "datatype": "FP32", "data": FEATURES}]},
    separators=(",", ":"),
).encode()

START_TIMEOUT_S = 120.0
STOP_GRACE_S = 20.0
FIRST_ANSWER_TIMEOUT_S = 60.0
RSS_INTERVAL_S = 0.25
WRK_TIMEOUT = "10s"
TARGET_CONCURRENCY = 16
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
OTHER_CPU_WARN = 0.15  # cores used by processes other than the server, wrk and this script
CPU_COUNT = os.cpu_count() or 1

console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)


class BenchError(Exception):
    """A server could not be prepared, started or checked; the others still run."""


# ------------------------------------------------------------------------------------- correctness


@dataclass(frozen=True)
class Expected:
    labels: list[int]
    probabilities: list[float]


def expected_answer() -> Expected:
    """What the shared model.joblib answers for the benchmark's request, computed here."""
    import joblib
    import numpy as np

    model = joblib.load(MODEL_PATH)
    features = np.asarray(FEATURES, dtype=np.float32)
    return Expected(
        [int(v) for v in model.predict(features)],
        [float(v) for v in model.predict_proba(features).ravel()],
    )


def _flat(data: Any) -> list[Any]:
    if isinstance(data, list):
        return [item for element in data for item in _flat(element)]
    return [data]


def check_v2(raw: bytes, expected: Expected, probabilities: bool) -> None:
    """A V2 response body holding the right label (and, when ``probabilities``, the probabilities)."""
    try:
        outputs = [_flat(output["data"]) for output in json.loads(raw)["outputs"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise BenchError(f"not a V2 response body ({exc!r}): {raw[:300]!r}") from None
    if expected.labels not in [[int(v) for v in data] for data in outputs if _all_numbers(data)]:
        raise BenchError(f"no output holds the labels {expected.labels}: {raw[:300]!r}")
    if probabilities and not any(close_to(data, expected.probabilities) for data in outputs):
        raise BenchError(f"no output holds the probabilities {expected.probabilities}: {raw[:300]!r}")


def _all_numbers(data: list[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in data)


def close_to(data: list[Any], want: list[float]) -> bool:
    if len(data) != len(want) or not _all_numbers(data):
        return False
    return all(abs(a - b) < 1e-5 for a, b in zip(data, want, strict=True))


@dataclass(frozen=True)
class Protocol:
    """What a server is asked: the route wrk loads (with its query string), the body it posts, where
    readiness is asked, and how an answer is checked against the model's own (``check`` raises
    BenchError; its last argument says whether the server returns the probabilities too)."""

    name: str
    path: str
    body: bytes
    ready_path: str
    check: Callable[[bytes, Expected, bool], None]


V2 = Protocol("V2 JSON", INFER_PATH, BODY, READY_PATH, check_v2)


# --------------------------------------------------------------------------------------------- servers


@dataclass(frozen=True)
class Launch:
    """How to start one server; ``port`` None means: read the port from inferd's ready line;
    ``ready_path``: where the server says it is ready, when not where its protocol asks;
    ``stop_group``: SIGTERM its whole process group to stop it."""

    command: list[str]
    cwd: Path
    port: int | None
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    ready_path: str | None = None
    stop_group: bool = False


@dataclass(frozen=True)
class ServerSpec:
    """One row of the table. ``counterpart``: the inferd row this one's req/s is compared with
    ("inferd / this"), the one speaking the same protocol."""

    key: str
    label: str
    group: str
    prepare: Callable[[Path], Launch]
    returns_probabilities: bool = True
    protocol: Protocol = V2
    counterpart: str | None = "inferd-1w"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def venv_tool(name: str) -> str:
    path = VENV_BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if found is None:
        raise BenchError(f"'{name}' is neither in {VENV_BIN} nor on PATH")
    return found


#: Adaptive batching for the batched inferd row: up to 64 rows, the first waiting at most 1 ms.
BATCHING = ("--max-batch-size", "64", "--max-batch-time-ms", "1")


def inferd_command(*arguments: str) -> list[str]:
    """``inferd serve ARGUMENTS`` on free ports (its HTTP port is read from its ready line)."""
    return [venv_tool("inferd"), "serve", *arguments, "--port", "0", "--grpc-port", "0"]


def inferd_launch(
    workers: int, batching: bool = False, options: Sequence[str] = ()
) -> Callable[[Path], Launch]:
    """``inferd serve examples/iris`` with ``workers``, adaptive batching or not, and ``options``."""

    def prepare(workdir: Path) -> Launch:
        command = inferd_command(str(EXAMPLE), *options)
        if workers > 1:
            command += ["--workers", str(workers)]
        if batching:
            command += BATCHING
        return Launch(command, ROOT, port=None)

    return prepare


def floor_launch(workdir: Path) -> Launch:
    port = free_port()
    command = [
        venv_tool("uvicorn"),
        "--app-dir", str(BENCH), "floor_app:app",
        "--host", HOST, "--port", str(port),
        "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning",
    ]  # fmt: skip
    return Launch(command, ROOT, port)  # the app loads examples/iris/model.joblib without inferd


def floor_granian_launch(workdir: Path) -> Launch:
    """The same floor app under granian's ASGI interface (one worker, uvloop): the server swap alone."""
    port = free_port()
    command = [
        venv_tool("granian"), "--interface", "asgi", "--working-dir", str(BENCH),
        "--host", HOST, "--port", str(port), "--workers", "1", "--loop", "uvloop", "--no-ws",
        "--log-level", "warning", "floor_app:app",
    ]  # fmt: skip
    return Launch(command, ROOT, port)


def mlserver_launch(parallel_workers: int) -> Callable[[Path], Launch]:
    """MLServer with ``parallel_workers`` inference processes (0: it predicts in its own process)."""

    def prepare(workdir: Path) -> Launch:
        return _mlserver(workdir, parallel_workers)

    return prepare


def _mlserver(workdir: Path, parallel_workers: int) -> Launch:
    executable = ensure_mlserver_env()
    port = free_port()
    settings = {
        "debug": False,  # MLServer's default debug=true logs every request; inferd and the floor do not
        "parallel_workers": parallel_workers,
        "host": HOST,
        "http_port": port,
        "grpc_port": free_port(),
        "metrics_port": free_port(),
    }
    model_settings = {
        "name": "iris",
        "implementation": "mlserver_sklearn.SKLearnModel",
        "parameters": {"uri": str(MODEL_PATH)},
    }
    (workdir / "settings.json").write_text(json.dumps(settings, indent=2))
    (workdir / "model-settings.json").write_text(json.dumps(model_settings, indent=2))
    return Launch([str(executable), "start", str(workdir)], workdir, port)


#: Written into a peer's venv once its requirements are installed: the list, one a line.
ENV_STAMP = ".bench-requirements"


def ensure_env(env: Path, executable: str, requirements: Sequence[str]) -> Path:
    """A peer in its own venv ``env``, created on first use with ``requirements`` and the same
    scikit-learn as ours (so the pickled iris model loads exactly as it does in inferd); its
    ``executable``. A venv whose install failed or whose requirements changed since is installed
    into again."""
    requirements = [*requirements, f"scikit-learn=={metadata.version('scikit-learn')}"]
    found, stamp = env / "bin" / executable, env / ENV_STAMP
    wanted = "\n".join(requirements) + "\n"
    if found.exists() and stamp.exists() and stamp.read_text() == wanted:
        return found
    console.print(f"installing {escape(' '.join(requirements))} into {env.relative_to(ROOT)} (once)...")
    python3 = shutil.which("python3") or sys.executable
    pip = str(env / "bin" / "pip")
    commands = [[pip, "install", "--quiet", *requirements]]
    if not (env / "bin" / "pip").exists():
        commands.insert(0, [python3, "-m", "venv", str(env)])
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise BenchError(f"{' '.join(command)} failed:\n{_tail(done.stdout + done.stderr)}")
    if not found.exists():
        raise BenchError(f"pip installed {requirements[0]} but {found} is missing")
    stamp.write_text(wanted)
    return found


def ensure_mlserver_env() -> Path:
    """MLServer in its own venv, bench/.envs/mlserver, created on first use."""
    return ensure_env(MLSERVER_ENV, "mlserver", MLSERVER_REQUIREMENTS)


SERVERS = (
    ServerSpec("inferd-1w", "inferd 1 worker", "inferd", inferd_launch(1), counterpart=None),
    ServerSpec("inferd-2w", "inferd 2 workers", "inferd", inferd_launch(2), counterpart=None),
    ServerSpec(
        "inferd-2w-batch", "inferd 2 workers, batching", "inferd", inferd_launch(2, True), counterpart=None
    ),
    ServerSpec(
        "inferd-1w-granian",
        "inferd 1 worker, --http granian",
        "granian",
        inferd_launch(1, options=("--http", "granian")),
        counterpart=None,
    ),
    ServerSpec("floor", "floor", "floor", floor_launch),
    ServerSpec("floor-granian", "floor on granian (ASGI)", "granian", floor_granian_launch),
    ServerSpec(
        "mlserver", "MLServer 1.7 in-process", "mlserver", mlserver_launch(0), returns_probabilities=False
    ),
    ServerSpec(
        "mlserver-workers",
        "MLServer 1.7, 2 workers",
        "mlserver",
        mlserver_launch(2),
        returns_probabilities=False,
    ),
)


# ------------------------------------------------------------------------------------ process handling


@dataclass
class Running:
    spec: ServerSpec
    process: subprocess.Popen[bytes]
    port: int
    stdout: Path
    stderr: Path

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (so field 4, ppid, is at index 1)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return raw[raw.rindex(")") + 2 :].split()  # the command name may hold spaces and parentheses


def _proc_stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of a process, None when it is gone."""
    fields = _stat_fields(pid)
    return None if fields is None else (int(fields[1]), int(fields[19]))


def cpu_ticks(pids: Sequence[int]) -> int:
    """User plus system CPU time of these processes, in clock ticks."""
    total = 0
    for pid in pids:
        if (fields := _stat_fields(pid)) is not None:
            total += int(fields[11]) + int(fields[12])
    return total


def process_tree(root: int) -> list[tuple[int, int]]:
    """(pid, start time) of ``root`` and all its descendants."""
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _proc_stat(int(entry))) is not None:
            children.setdefault(stat[0], []).append((int(entry), stat[1]))
    root_stat = _proc_stat(root)
    if root_stat is None:
        return []
    tree, todo = [(root, root_stat[1])], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            tree.append(child)
            todo.append(child[0])
    return tree


def rss_bytes(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE
    except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError):
        return 0


class PeakRss:
    """Samples the summed RSS of a process tree in a background thread and keeps the peak."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_bytes = 0
        self.peak_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="peak-rss", daemon=True)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(RSS_INTERVAL_S):
                return

    def sample(self) -> None:
        tree = process_tree(self.pid)
        self.peak_bytes = max(self.peak_bytes, sum(rss_bytes(pid) for pid, _ in tree))
        self.peak_processes = max(self.peak_processes, len(tree))


def machine_ticks() -> tuple[int, int]:
    """(busy, all) clock ticks of all CPUs together since boot, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    everything = sum(values[:8])  # user nice system idle iowait irq softirq steal (guest is in user)
    return everything - idle, everything


def _own_and_children_ticks() -> float:
    """CPU ticks of this script and of the children it has waited for (wrk)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = os.times()
    return (children.ru_utime + children.ru_stime + own.user + own.system) * CLOCK_TICKS


class CpuMeter:
    """Cores used by the server and by everything else on the machine (other than wrk and us)."""

    def __init__(self, server_pid: int) -> None:
        self.pids = [pid for pid, _ in process_tree(server_pid)]
        self.server_start = cpu_ticks(self.pids)
        self.ours_start = _own_and_children_ticks()
        self.machine_start = machine_ticks()

    def read(self) -> tuple[float, float]:
        """(server cores, other cores) since the meter was made."""
        busy, everything = (now - then for now, then in zip(machine_ticks(), self.machine_start, strict=True))
        server = cpu_ticks(self.pids) - self.server_start
        ours = _own_and_children_ticks() - self.ours_start
        wall = max(everything / CPU_COUNT, 1)
        return server / wall, max(busy - server - ours, 0) / wall


def stop(process: subprocess.Popen[str] | subprocess.Popen[bytes], group: bool = False) -> str:
    """SIGTERM (to the process's whole group when ``group``: a server whose main process waits for
    its children), wait, then SIGKILL whatever of the process tree is left; how it ended, in words."""
    tree = process_tree(process.pid)
    if process.poll() is None:
        if group:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGTERM)
        else:
            process.send_signal(signal.SIGTERM)
    try:
        process.wait(STOP_GRACE_S)
        code = process.returncode
        outcome = "stopped by SIGTERM" if code == -signal.SIGTERM else f"stopped (exit code {code})"
    except subprocess.TimeoutExpired:
        outcome = f"killed: still running {STOP_GRACE_S:.0f} s after SIGTERM"
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # the server leads its own session and group
    for pid, started in tree[1:]:
        stat = _proc_stat(pid)
        if stat is not None and stat[1] == started:  # the same process, not a reused pid
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    process.wait()
    return outcome


@contextlib.contextmanager
def serving(spec: ServerSpec, workdir: Path) -> Iterator[Running]:
    """Start a server, wait until it is ready, and always stop it again."""
    launch = spec.prepare(workdir)
    stdout, stderr = workdir / "stdout.log", workdir / "stderr.log"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = subprocess.Popen(
            launch.command,
            cwd=launch.cwd,
            env=launch.env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,  # Ctrl+C reaches only us; we stop the server ourselves
        )
    try:
        port = launch.port if launch.port is not None else _wait_for_ready_line(process, stdout, stderr)
        running = Running(spec, process, port, stdout, stderr)
        _wait_for_http_ready(running, launch.ready_path or spec.protocol.ready_path)
        yield running
    finally:
        console.print(f"  {spec.label}: {stop(process, launch.stop_group)}")


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _failed_to_start(stderr: Path, why: str) -> BenchError:
    return BenchError(f"{why}; the end of its stderr:\n{_tail(stderr.read_text(errors='replace'))}")


def _wait_for_ready_line(process: subprocess.Popen[bytes], stdout: Path, stderr: Path) -> int:
    deadline = time.monotonic() + START_TIMEOUT_S
    pattern = re.compile(r"inferd ready: http://[^\s:]+:(\d+)")
    while time.monotonic() < deadline:
        if match := pattern.search(stdout.read_text(errors="replace")):
            return int(match.group(1))
        if process.poll() is not None:
            raise _failed_to_start(stderr, f"exited with code {process.returncode}")
        time.sleep(0.1)
    raise _failed_to_start(stderr, f"printed no ready line in {START_TIMEOUT_S:.0f} s")


def _wait_for_http_ready(running: Running, path: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if running.process.poll() is not None:
            raise _failed_to_start(running.stderr, f"exited with code {running.process.returncode}")
        with contextlib.suppress(OSError, http.client.HTTPException):
            if request(running.port, "GET", path)[0] == 200:
                return
        time.sleep(0.2)
    raise _failed_to_start(running.stderr, f"not ready in {START_TIMEOUT_S:.0f} s")


def request(
    port: int, method: str, path: str, body: bytes | None = None, timeout: float = 10
) -> tuple[int, bytes]:
    """One HTTP request, straight to the socket (no proxy settings apply)."""
    connection = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def check_answer(running: Running, expected: Expected) -> None:
    """The server answers its protocol's request with status 200 and the model's answer (in time
    for a first answer: deepaas-run starts its predict process on the first request)."""
    protocol = running.spec.protocol
    try:
        status, raw = request(running.port, "POST", protocol.path, protocol.body, FIRST_ANSWER_TIMEOUT_S)
    except (OSError, http.client.HTTPException) as exc:
        raise BenchError(f"POST {protocol.path} got no answer: {exc!r}") from None
    if status != 200:
        raise BenchError(f"POST {protocol.path} answered {status}: {raw[:300]!r}")
    protocol.check(raw, expected, running.spec.returns_probabilities)


# --------------------------------------------------------------------------------------------- wrk


@dataclass(frozen=True)
class RunResult:
    server: str
    label: str
    concurrency: int
    round: int
    threads: int
    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float
    non_2xx: int
    socket_errors: int
    server_cpu: float
    other_cpu: float
    peak_rss_mib: float

    @property
    def errors(self) -> int:
        return self.non_2xx + self.socket_errors

    @property
    def cpu_us(self) -> float:
        """CPU time the server's process tree spent per answered request, in microseconds."""
        return self.server_cpu / self.rps * 1e6 if self.rps else float("inf")

    @property
    def disturbed(self) -> bool:
        return self.other_cpu > OTHER_CPU_WARN


def wrk_threads(concurrency: int) -> int:
    """One wrk thread for one connection, else two: the server needs the machine's cores more."""
    return 1 if concurrency == 1 else min(2, concurrency)


def run_wrk(running: Running, concurrency: int, seconds: int, round_: int = 0) -> RunResult:
    threads = wrk_threads(concurrency)
    protocol = running.spec.protocol
    command = [
        "wrk", f"-t{threads}", f"-c{concurrency}", f"-d{seconds}s", "--timeout", WRK_TIMEOUT,
        "-s", str(LUA_SCRIPT), running.url + protocol.path,
    ]  # fmt: skip
    env = {**os.environ, "V2_IRIS_BODY": protocol.body.decode()}
    meter = CpuMeter(running.process.pid)
    with PeakRss(running.process.pid) as rss:
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, check=False, timeout=seconds + 60
        )
        server_cpu, other_cpu = meter.read()
    match = re.search(r"^V2_IRIS_RESULT (\{.*\})$", done.stdout, re.MULTILINE)
    if done.returncode != 0 or match is None:
        raise BenchError(f"wrk failed (exit {done.returncode}):\n{_tail(done.stdout + done.stderr)}")
    raw = json.loads(match.group(1))
    elapsed = raw["duration_us"] / 1e6
    return RunResult(
        server=running.spec.key,
        label=running.spec.label,
        concurrency=concurrency,
        round=round_,
        threads=threads,
        requests=raw["requests"],
        seconds=round(elapsed, 3),
        rps=raw["requests"] / elapsed,
        p50_ms=raw["p50_us"] / 1000,
        p90_ms=raw["p90_us"] / 1000,
        p99_ms=raw["p99_us"] / 1000,
        mean_ms=raw["mean_us"] / 1000,
        max_ms=raw["max_us"] / 1000,
        non_2xx=raw["non_2xx"],
        socket_errors=raw["connect_errors"] + raw["read_errors"] + raw["write_errors"] + raw["timeouts"],
        server_cpu=round(server_cpu, 3),
        other_cpu=round(other_cpu, 2),
        peak_rss_mib=round(rss.peak_bytes / 2**20, 1),
    )


# ------------------------------------------------------------------------------------------ running


@dataclass
class ServerOutcome:
    key: str
    label: str
    counterpart: str | None = None
    runs: list[RunResult] = field(default_factory=list)
    peak_rss_bytes: int = 0
    peak_processes: int = 0
    error: str | None = None


def bench_server(
    spec: ServerSpec,
    args: argparse.Namespace,
    expected: Expected,
    outcome: ServerOutcome,
    round_: int,
    measured: Callable[[], None] = lambda: None,
) -> None:
    """Start, check and measure one server, filling ``outcome`` as it goes (so Ctrl+C keeps what ran)."""
    console.print(f"[bold]{spec.label}[/]" + (f" (round {round_}/{args.rounds})" if args.rounds > 1 else ""))
    try:
        with tempfile.TemporaryDirectory(prefix=f"v2-iris-{spec.key}-") as tmp:
            with serving(spec, Path(tmp)) as running, PeakRss(running.process.pid) as rss:
                try:
                    protocol = spec.protocol
                    console.print(f"  ready at {running.url}; {protocol.name}: POST {escape(protocol.path)}")
                    check_answer(running, expected)
                    for concurrency in args.concurrency:
                        run_wrk(running, concurrency, args.warmup)
                        outcome.runs.append(run_wrk(running, concurrency, args.duration, round_))
                        console.print(f"  {_progress(outcome.runs[-1])}")
                        measured()
                finally:
                    rss.sample()
                    outcome.peak_rss_bytes = max(outcome.peak_rss_bytes, rss.peak_bytes)
                    outcome.peak_processes = max(outcome.peak_processes, rss.peak_processes)
    except BenchError as exc:
        outcome.error = str(exc)
        console.print(f"  [red]failed:[/] {exc}")


@contextlib.contextmanager
def run_progress(total: int) -> Iterator[tuple[Progress, TaskID]]:
    """A progress bar of the measured runs under the lines each run prints (on a terminal only)."""
    columns = (
        TextColumn("measured runs"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        yield progress, progress.add_task("runs", total=total)


def _progress(result: RunResult) -> str:
    errors = f", [red]{result.errors} errors[/]" if result.errors else ""
    other = f", [yellow]other processes used {result.other_cpu:.2f} cores[/]" if result.disturbed else ""
    return (
        f"c{result.concurrency:<3} {result.rps:9.0f} req/s  p50 {result.p50_ms:6.2f} ms  "
        f"p99 {result.p99_ms:6.2f} ms  server CPU {result.cpu_us:,.0f} us/request  "
        f"peak {result.peak_rss_mib:.0f} MiB{errors}{other}"
    )


def ensure_model() -> None:
    """Every server loads the same fitted model: examples/iris/model.joblib (train.py writes it)."""
    if MODEL_PATH.exists():
        return
    console.print(f"training {MODEL_PATH.relative_to(ROOT)} with examples/iris/train.py...")
    subprocess.run([sys.executable, str(EXAMPLE / "train.py"), str(MODEL_PATH)], check=True)


def from_bytecode() -> None:
    """Let the servers started from now on run from bytecode, as installed packages do (pip compiles
    them): with PYTHONDONTWRITEBYTECODE set, inferd, run from this checkout, would compile its modules
    at every start, and no peer would."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def write_dated(name: str, text: str) -> int:
    """Print a report and write it to bench/results/NAME-<date>.txt; the exit code (1: a target FAILed)."""
    print("\n" + text, end="")
    path = ROOT / "bench" / "results" / f"{name}-{datetime.now(timezone.utc):%Y-%m-%d}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f"wrote {path.relative_to(ROOT)}")
    return 0 if "FAIL" not in text else 1


def require_wrk() -> str | None:
    if shutil.which("wrk") is None:
        return (
            "wrk is not installed. On Debian or Ubuntu: sudo apt-get update && sudo apt-get install -y wrk "
            "(macOS: brew install wrk)"
        )
    return None


# ----------------------------------------------------------------------------------------- reporting


@dataclass(frozen=True)
class TargetResult:
    name: str
    status: str  # PASS, FAIL or N/A
    detail: str


@dataclass(frozen=True)
class Cell:
    """Every round of one server at one concurrency. The median run by req/s stands for them all,
    taken among the runs no other process disturbed when there are any."""

    runs: tuple[RunResult, ...]

    @property
    def median(self) -> RunResult:
        calm = [run for run in self.runs if not run.disturbed] or list(self.runs)
        return sorted(calm, key=lambda run: run.rps)[(len(calm) - 1) // 2]

    @property
    def rps(self) -> float:
        return self.median.rps

    @property
    def non_2xx(self) -> int:
        return sum(run.non_2xx for run in self.runs)

    @property
    def socket_errors(self) -> int:
        return sum(run.socket_errors for run in self.runs)

    @property
    def errors(self) -> int:
        return self.non_2xx + self.socket_errors

    @property
    def disturbed(self) -> bool:
        return self.median.disturbed


def find_cell(outcomes: Sequence[ServerOutcome], key: str, concurrency: int) -> Cell | None:
    runs = tuple(
        run
        for outcome in outcomes
        for run in outcome.runs
        if run.server == key and run.concurrency == concurrency
    )
    return Cell(runs) if runs else None


def _best(outcomes: Sequence[ServerOutcome], keys: Sequence[str], concurrency: int) -> Cell | None:
    """The cell with the most req/s among ``keys`` at ``concurrency`` (a peer's best configuration)."""
    cells = [cell for key in keys if (cell := find_cell(outcomes, key, concurrency)) is not None]
    return max(cells, key=lambda cell: cell.rps, default=None)


def _target(
    outcomes: Sequence[ServerOutcome],
    name: str,
    key: str,
    base_keys: Sequence[str],
    factor: float,
    concurrency: int = TARGET_CONCURRENCY,
) -> TargetResult:
    """PASS when ``key``'s req/s at ``concurrency`` is at least ``factor`` times the best of
    ``base_keys``'s."""
    cell, base = find_cell(outcomes, key, concurrency), _best(outcomes, base_keys, concurrency)
    if cell is None or base is None:
        missing = [f"{k} c{concurrency}" for k, c in ((key, cell), ("/".join(base_keys), base)) if c is None]
        return TargetResult(name, "N/A", f"not measured: {', '.join(missing)}")
    ratio = cell.rps / base.rps if base.rps else float("inf")
    detail = (
        f"{cell.median.label} {cell.rps:,.0f} req/s / {base.median.label} {base.rps:,.0f} req/s "
        f"= {ratio:.2f}x (needs >= {factor:.2f}x)"
    )
    if cell.errors or base.errors:
        return TargetResult(name, "FAIL", f"{detail}; a run had errors")
    if cell.disturbed or base.disturbed:
        detail += "; other processes used the CPU during a run"
    return TargetResult(name, "PASS" if ratio >= factor else "FAIL", detail)


#: MLServer's configurations; the targets compare with the faster one.
MLSERVER_KEYS = ("mlserver", "mlserver-workers")
#: Issue 26 (in place of issue 7's 150 MiB): the most one inferd worker serving iris, gRPC on, may
#: hold, as a multiple of the floor's peak RSS in the same run (bench/memory.py measures it alone).
MEMORY_FACTOR = 1.15


def evaluate_targets(outcomes: Sequence[ServerOutcome]) -> list[TargetResult]:
    c = TARGET_CONCURRENCY
    mlserver, floor = MLSERVER_KEYS, ("floor",)
    return [
        # issue 2: one row per request, concurrency 16
        _target(outcomes, f"inferd 1 worker c{c} >= 2x MLServer", "inferd-1w", mlserver, 2.0),
        _target(outcomes, f"inferd 1 worker c{c} >= 85% of floor", "inferd-1w", floor, 0.85),
        _target(outcomes, f"inferd 2 workers c{c} >= 1.8x 1 worker", "inferd-2w", ("inferd-1w",), 1.8),
        # issue 26, past the floor: the default HTTP server, then granian (--http granian)
        _target(outcomes, f"inferd 1 worker c{c} >= 1.2x floor", "inferd-1w", floor, 1.2),
        _target(outcomes, f"inferd 1 worker granian c{c} >= 1.2x floor", "inferd-1w-granian", floor, 1.2),
        # issue 7: batching on, 2 workers, concurrency 64; CPU and memory of one worker
        _target(outcomes, "inferd 2 workers batching c64 >= 1.5x floor", "inferd-2w-batch", floor, 1.5, 64),
        _target(
            outcomes,
            "inferd 2 workers batching c64 >= 5x MLServer's best",
            "inferd-2w-batch",
            mlserver,
            5,
            64,
        ),
        _cpu_target(outcomes, f"inferd 1 worker c{c} server CPU per request <= 1.2x floor's", 1.2),
        _memory_target(outcomes, f"inferd 1 worker peak RSS <= {MEMORY_FACTOR:.2f}x floor's"),
    ]


def _cpu_target(outcomes: Sequence[ServerOutcome], name: str, factor: float) -> TargetResult:
    """PASS when inferd's server CPU time per request (1 worker, batching off) is at most ``factor``
    times the floor's at the target concurrency."""
    cell, base = (
        find_cell(outcomes, "inferd-1w", TARGET_CONCURRENCY),
        find_cell(outcomes, "floor", TARGET_CONCURRENCY),
    )
    if cell is None or base is None or not cell.rps or not base.rps:
        return TargetResult(name, "N/A", "not measured: inferd-1w and floor are both needed")
    ours, theirs = cell.median.cpu_us, base.median.cpu_us
    ratio = ours / theirs
    detail = f"{ours:.0f} us / {theirs:.0f} us = {ratio:.2f}x (needs <= {factor:.2f}x)"
    return TargetResult(name, "PASS" if ratio <= factor else "FAIL", detail)


def _memory_target(outcomes: Sequence[ServerOutcome], name: str) -> TargetResult:
    """PASS when inferd with one worker peaked at most MEMORY_FACTOR times the floor's RSS."""
    measured = {o.key: o for o in outcomes if o.peak_rss_bytes}
    ours, floor = measured.get("inferd-1w"), measured.get("floor")
    if ours is None or floor is None:
        return TargetResult(name, "N/A", "not measured: inferd-1w and floor are both needed")
    peak, base = ours.peak_rss_bytes / 2**20, floor.peak_rss_bytes / 2**20
    detail = f"{peak:.1f} MiB ({ours.peak_processes} process(es)) / {base:.1f} MiB = {peak / base:.3f}x"
    return TargetResult(name, "PASS" if peak <= MEMORY_FACTOR * base else "FAIL", detail)


def _ratio(cell: Cell, base: Cell | None) -> str:
    if base is None or not base.rps:
        return "-"
    return f"{cell.rps / base.rps:.2f}x"


COLUMNS = (
    "server", "concurrency", "req/s", "p50 ms", "p99 ms", "errors",
    "CPU us/req", "peak MiB", "vs floor", "inferd / this", "other CPU",
)  # fmt: skip


def results_table(outcomes: Sequence[ServerOutcome], args: argparse.Namespace) -> Table:
    rounds = f", median of {args.rounds} rounds" if args.rounds > 1 else ""
    table = Table(
        title=f"iris, one row per request: V2 JSON (Seldon and DEEPaaS rows: their own protocol), "
        f"{args.duration} s per run{rounds}, {CPU_COUNT} cores",
        caption_justify="left",
    )
    for name in COLUMNS:
        table.add_column(name, justify="left" if name == "server" else "right")
    if args.rounds > 1:
        table.add_column("req/s min-max", justify="right")
    cells = []
    for outcome in outcomes:
        if outcome.error is not None and not outcome.runs:
            table.add_row(outcome.label, "-", "[red]failed[/]", *["-"] * (len(table.columns) - 3))
        for concurrency in args.concurrency:
            if (cell := find_cell(outcomes, outcome.key, concurrency)) is not None:
                cells.append(cell)
                table.add_row(*_row(cell, outcome, outcomes, args.rounds > 1))
        if outcome is not outcomes[-1]:
            table.add_section()
    table.caption = _footnotes(any(cell.errors for cell in cells), any(cell.disturbed for cell in cells))
    return table


def _row(cell: Cell, outcome: ServerOutcome, outcomes: Sequence[ServerOutcome], spread: bool) -> list[str]:
    run = cell.median
    errors = f"[red]{cell.non_2xx} non-2xx, {cell.socket_errors} socket ![/]" if cell.errors else "0"
    other = f"[yellow]{run.other_cpu:.2f} *[/]" if run.disturbed else f"{run.other_cpu:.2f}"
    counterpart = (
        None if outcome.counterpart is None else find_cell(outcomes, outcome.counterpart, run.concurrency)
    )
    row = [
        run.label,
        str(run.concurrency),
        f"{run.rps:,.0f}",
        f"{run.p50_ms:.2f}",
        f"{run.p99_ms:.2f}",
        errors,
        f"{run.cpu_us:,.0f}",
        f"{max(r.peak_rss_mib for r in cell.runs):.0f}",
        _ratio(cell, find_cell(outcomes, "floor", run.concurrency)),
        "-" if counterpart is None else _ratio(counterpart, cell),
        other,
    ]
    if spread:
        row.append(f"{min(r.rps for r in cell.runs):,.0f}-{max(r.rps for r in cell.runs):,.0f}")
    return row


def _footnotes(errors: bool, disturbed: bool) -> str:
    notes = [
        "MLServer's sklearn runtime returns the predict output only; every other server returns the label "
        "and the class probabilities.",
        f"wrk runs on the same {CPU_COUNT} cores (-t1 at c1, -t2 above); ratios are of req/s at equal "
        "concurrency.",
        "CPU us/req: CPU time of the server's process tree per answered request; peak MiB: the peak "
        "summed RSS of that tree during the run; other CPU: cores used by anything but the server, wrk "
        "and this script.",
        "inferd / this: the req/s of the inferd row speaking the same protocol (inferd 1 worker for V2, "
        "inferd's Seldon and DEEPaaS dialect rows for theirs) over this row's.",
    ]
    if errors:
        notes.append("[red]! runs with non-2xx responses or socket errors: their numbers are not valid.[/]")
    if disturbed:
        notes.append(
            f"[yellow]* other processes used more than {OTHER_CPU_WARN} cores during a run: "
            "the numbers are disturbed.[/]"
        )
    return "\n".join(notes)


def ratio_table(outcomes: Sequence[ServerOutcome], args: argparse.Namespace) -> Table | None:
    """inferd's ratio to each peer, the row of the same protocol (inferd / peer): req/s at each
    concurrency (higher is better), then CPU per request at the target concurrency and peak memory
    over the whole run (lower is better)."""
    by_key = {outcome.key: outcome for outcome in outcomes}
    c = TARGET_CONCURRENCY
    table = Table(title="inferd / each peer", caption_justify="left")
    for name in (
        "peer",
        "inferd row",
        *(f"req/s c{n}" for n in args.concurrency),
        f"CPU/req c{c}",
        "peak RSS",
    ):
        table.add_column(name, justify="left" if name in ("peer", "inferd row") else "right")
    for outcome in outcomes:
        ours = by_key.get(outcome.counterpart or "")
        if ours is None or not outcome.runs or not ours.runs:
            continue
        cells = [
            (find_cell(outcomes, ours.key, n), find_cell(outcomes, outcome.key, n)) for n in args.concurrency
        ]
        rps = [_ratio(a, b) if a is not None and b is not None else "-" for a, b in cells]
        mine, theirs = find_cell(outcomes, ours.key, c), find_cell(outcomes, outcome.key, c)
        cpu = f"{mine.median.cpu_us / theirs.median.cpu_us:.2f}x" if mine and theirs else "-"
        memory = f"{ours.peak_rss_bytes / outcome.peak_rss_bytes:.2f}x" if outcome.peak_rss_bytes else "-"
        table.add_row(outcome.label, ours.label, *rps, cpu, memory)
    table.caption = "req/s: higher is better; CPU/req and RSS: lower is better."
    return table if table.row_count else None


def print_report(
    outcomes: Sequence[ServerOutcome],
    targets: Sequence[TargetResult],
    args: argparse.Namespace,
    out: Console = console,
) -> None:
    out.print()
    if not any(outcome.runs or outcome.error for outcome in outcomes):
        out.print("no results")
        return
    out.print(results_table(outcomes, args))
    if (ratios := ratio_table(outcomes, args)) is not None:
        out.print()
        out.print(ratios)
    out.print()
    out.print("[bold]Targets (issues 2 and 7)[/]")
    colour = {"PASS": "green", "FAIL": "red", "N/A": "yellow"}
    for target in targets:
        line = f"  [{colour[target.status]}]{target.status:<4}[/] {target.name}: {target.detail}"
        out.print(line, soft_wrap=True)
    for outcome in outcomes:
        if outcome.error is not None:
            out.print(f"\n[red]{escape(outcome.label)} failed:[/] {escape(outcome.error)}")


def write_json(
    path: Path, outcomes: Sequence[ServerOutcome], targets: Sequence[TargetResult], args: argparse.Namespace
) -> None:
    document = {
        "meta": {
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "rounds": args.rounds,
            "concurrency": args.concurrency,
            "cpu_count": CPU_COUNT,
            "platform": platform.platform(),
            "python": platform.python_version(),
            "inferd": _version("inferd"),
            "wrk": _wrk_version(),
            "inferd_environment": {k: v for k, v in os.environ.items() if k.startswith("INFERD_")},
        },
        "servers": [
            {key: value for key, value in asdict(outcome).items() if key != "runs"} for outcome in outcomes
        ],
        "runs": [asdict(run) for outcome in outcomes for run in outcome.runs],
        "targets": [asdict(target) for target in targets],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n")
    console.print(f"\nwrote {path}")


def write_results(
    name: str,
    header: Sequence[str],
    outcomes: Sequence[ServerOutcome],
    targets: Sequence[TargetResult],
    args: argparse.Namespace,
) -> Path:
    """The report as plain text under ``header``, in bench/results/NAME-<date>-<time>.txt (UTC)."""
    now = datetime.now(timezone.utc)
    buffer = io.StringIO()
    print_report(outcomes, targets, args, Console(file=buffer, width=170, color_system=None, highlight=False))
    body = "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())
    path = BENCH / "results" / f"{name}-{now:%Y-%m-%d-%H%M}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([*header, f"# finished {now:%Y-%m-%dT%H:%MZ}", body.strip("\n")]) + "\n")
    console.print(f"\nwrote {path.relative_to(ROOT)}")
    return path


def machine_description() -> str:
    """The machine in one line: cores, CPU model, memory, kernel, Python and wrk."""
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "?")
    meminfo = Path("/proc/meminfo").read_text().split()
    memory = int(meminfo[meminfo.index("MemTotal:") + 1]) / 2**20 if "MemTotal:" in meminfo else 0
    return (
        f"{len(os.sched_getaffinity(0))} cores (nproc), {cpu}, {memory:.0f} GiB, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}, "
        f"{_wrk_version().split(' Copyright')[0]} on the same machine"
    )


def git_revision() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or "?"


#: The peers' packages whose installed versions a results file names.
PEER_PACKAGES = ("mlserver", "mlserver_sklearn", "kserve", "bentoml", "ray", "seldon_core", "deepaas")


def peer_versions() -> str:
    """The peers' versions installed in bench/.envs, as 'name version, ...'."""
    found = {}
    for info in sorted((BENCH / ".envs").glob("*/lib/python*/site-packages/*.dist-info")):
        name, _, version = info.name.removesuffix(".dist-info").partition("-")
        if name.lower() in PEER_PACKAGES:
            found[name.lower()] = version
    return ", ".join(f"{name} {version}" for name, version in found.items()) or "none installed"


def machine_lines(load: tuple[float, float, float]) -> list[str]:
    """The header lines of a results file: the machine, its load when the run began, the versions."""
    return [
        f"# machine: {machine_description()}",
        f"# load average when the run began: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1, 5, 15 min)",
        f"# inferd {git_revision()}; peers: {peer_versions()}",
    ]


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _wrk_version() -> str:
    done = subprocess.run(["wrk", "--version"], capture_output=True, text=True, check=False)
    return (done.stdout + done.stderr).splitlines()[0] if (done.stdout + done.stderr) else "?"


# ---------------------------------------------------------------------------------------------- cli


def _seconds(text: str) -> int:
    match = re.fullmatch(r"(\d+)\s*(s|m)?", text.strip())
    if match is None or int(match.group(1)) == 0:
        raise argparse.ArgumentTypeError(f"expected a duration like 10s or 1m, got '{text}'")
    return int(match.group(1)) * (60 if match.group(2) == "m" else 1)


def _concurrency(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 1,16,64, got '{text}'") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("concurrency values must be positive")
    return values


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return int(text)


def _only(servers: Sequence[ServerSpec]) -> Callable[[str], list[ServerSpec]]:
    """The parser of --only: rows named by key or by group, in the order of ``servers``."""

    def parse(text: str) -> list[ServerSpec]:
        names = {part.strip() for part in text.split(",") if part.strip()}
        known = {spec.group for spec in servers} | {spec.key for spec in servers}
        if not names or names - known:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(sorted(known))}; got '{text}'")
        return [spec for spec in servers if spec.group in names or spec.key in names]

    return parse


def parse_args(
    argv: Sequence[str] | None, servers: Sequence[ServerSpec], description: str
) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    groups = {spec.group: [s.key for s in servers if s.group == spec.group] for spec in servers}
    names = ", ".join(
        f"{group} ({', '.join(keys)})" if len(keys) > 1 else group for group, keys in groups.items()
    )
    parser.add_argument(
        "--only",
        type=_only(servers),
        default=list(servers),
        metavar="NAMES",
        help=f"comma-separated rows or groups of rows: {names} [default: all]",
    )
    parser.add_argument("--duration", type=_seconds, default=10, help="measured run per concurrency [10s]")
    parser.add_argument(
        "--warmup", type=_seconds, default=3, help="warm-up run before each measured run [3s]"
    )
    parser.add_argument("--concurrency", type=_concurrency, default=[1, 16, 64], help="connections [1,16,64]")
    parser.add_argument(
        "--rounds",
        type=_positive,
        default=1,
        help="run the whole sequence this many times and report the median run of each cell [1]",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON here")
    return parser.parse_args(argv)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(
    argv: Sequence[str] | None = None,
    servers: Sequence[ServerSpec] = SERVERS,
    script: str = "v2_iris.py",
    results: str = "v2-iris",
    description: str = __doc__ or "",
) -> int:
    """Run the rows of ``servers`` chosen by argv, print the report and write it, with the machine,
    to bench/results/RESULTS-<date>-<time>.txt."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv, servers, description)
    load = os.getloadavg()
    if (problem := require_wrk()) is not None:
        console.print(f"[red]error:[/] {problem}")
        return 2
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    signal.signal(signal.SIGTERM, _raise_interrupt)  # stop the servers on SIGTERM as on Ctrl+C
    outcomes: list[ServerOutcome] = []
    interrupted = False
    try:
        ensure_model()
        expected = expected_answer()
        outcomes = [ServerOutcome(spec.key, spec.label, spec.counterpart) for spec in args.only]
        per_server = len(args.concurrency)
        with run_progress(args.rounds * len(args.only) * per_server) as (progress, cells):
            for round_ in range(1, args.rounds + 1):
                for index, (spec, outcome) in enumerate(zip(args.only, outcomes, strict=True)):
                    if outcome.error is None:
                        bench_server(spec, args, expected, outcome, round_, lambda: progress.advance(cells))
                    done = ((round_ - 1) * len(args.only) + index + 1) * per_server
                    progress.update(cells, completed=done)  # a failed server's runs count as done
    except KeyboardInterrupt:
        interrupted = True
        console.print("\n[yellow]interrupted: the servers are stopped; partial results follow[/]")
    targets = evaluate_targets(outcomes)
    print_report(outcomes, targets, args)
    if any(outcome.runs for outcome in outcomes):
        header = [f"# bench/{script} {' '.join(argv)}".rstrip(), *machine_lines(load)]
        write_results(results, header, outcomes, targets, args)
    if args.json is not None:
        write_json(args.json, outcomes, targets, args)
    if interrupted:
        return 130
    return 1 if any(outcome.error for outcome in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
