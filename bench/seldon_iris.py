"""Seldon iris benchmark: inferd's Seldon predict route against seldon-core-microservice 1.18.2.

Both servers run the same user model, ``IrisModel.py`` written by this script into a temporary
folder (their cwd): a Seldon Python class whose ``load()`` reads ``examples/iris/model.joblib`` when
present and otherwise trains scikit-learn's iris ``LogisticRegression(max_iter=1000)`` (nothing is
downloaded), and whose ``predict(X, features_names)`` returns ``predict_proba(X)``.

- inferd: ``inferd serve IrisModel --dialect seldon --no-grpc --port 0`` (bench/loadgen.py).
- seldon-core: ``seldon-core-microservice IrisModel --service-type MODEL`` on free loopback-reached
  ports, from its own venv ``bench/.envs/seldon`` (gitignored), created on first use with
  ``seldon-core==1.18.2``, ``setuptools<81`` (it still imports pkg_resources), joblib and our
  scikit-learn version. It runs in its own idiomatic, default configuration: gunicorn with 1 worker
  and 1 thread (the sync worker, which closes the connection after each answer), INFO logging, no
  access log, plus its gRPC and metrics server processes, all counted in its peak RSS.

Both must first answer ``POST /api/v1.0/predictions`` with ``{"data":{"ndarray":[[5.1,3.5,1.4,0.2]]}}``
(JSON) with status 200 and the same three probabilities (within 1e-6). Then, for each concurrency,
for each round, wrk (bench/v2_iris.lua with the Seldon body) runs a warm-up and a measured run on
one server, then on the other. The table gives the medians over the rounds of req/s, p50 and p99
latency, the peak RSS of each server's process tree during its measured runs, and inferd's req/s as a
ratio of seldon-core's; it is also written, with the machine, to bench/results/seldon-<date>.txt.
Target: at concurrency 16, inferd >= 3x seldon-core's req/s and a lower p99. Exit 0 on PASS, 1 on
FAIL, 2 when the benchmark could not run.

    .venv/bin/python bench/seldon_iris.py [--duration 10] [--rounds 3] [--concurrency 1 16 64]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType
from urllib.parse import urlsplit

from loadgen import LUA, RESULT, ROOT, start_inferd
from v2_iris import WRK_TIMEOUT, BenchError, PeakRss, ensure_env, free_port, process_tree, request, stop

HOST = "127.0.0.1"
PATH = "/api/v1.0/predictions"
BODY = '{"data":{"ndarray":[[5.1,3.5,1.4,0.2]]}}'
TARGET_CONCURRENCY = 16
TARGET_RATIO = 3.0
START_TIMEOUT_S = 120.0
SELDON_ENV = ROOT / "bench" / ".envs" / "seldon"
SELDON_VERSION = "1.18.2"
MODEL_JOBLIB = ROOT / "examples" / "iris" / "model.joblib"
SERVERS = ("inferd", "seldon-core")

IRIS_MODEL = '''
"""The iris model of bench/seldon_iris.py, a Seldon Python class served by both servers."""

from pathlib import Path

SAVED = Path({saved!r})


class IrisModel:
    def load(self):
        if SAVED.exists():
            import joblib

            self.clf = joblib.load(SAVED)
        else:
            from sklearn.datasets import load_iris
            from sklearn.linear_model import LogisticRegression

            features, labels = load_iris(return_X_y=True)
            self.clf = LogisticRegression(max_iter=1000).fit(features, labels)

    def predict(self, X, features_names=None):
        return self.clf.predict_proba(X)

    def class_names(self):
        return ["setosa", "versicolor", "virginica"]
'''


@dataclass
class Run:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    peak_rss: int


@dataclass
class Server:
    name: str
    process: subprocess.Popen[str] | subprocess.Popen[bytes]
    port: int
    runs: dict[int, list[Run]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}{PATH}"


# ------------------------------------------------------------------------------------------ servers


def ensure_seldon_env() -> Path:
    """seldon-core in its own venv, bench/.envs/seldon, created on first use."""
    requirements = [f"seldon-core=={SELDON_VERSION}", "setuptools<81", "joblib"]
    return ensure_env(SELDON_ENV, "seldon-core-microservice", requirements)


def start_seldon(executable: Path, folder: Path) -> Server:
    """``seldon-core-microservice IrisModel`` in its default configuration, once it answers /health/ping."""
    port = free_port()
    command = [
        str(executable), "IrisModel", "--service-type", "MODEL",
        "--http-port", str(port), "--grpc-port", str(free_port()), "--metrics-port", str(free_port()),
    ]  # fmt: skip
    log = folder / "seldon-core.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=folder, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
        )
    server = Server("seldon-core", process, port)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BenchError(f"seldon-core exited with {process.returncode}:\n{log.read_text()[-2000:]}")
        with contextlib.suppress(OSError):
            if request(port, "GET", "/health/ping")[0] == 200:
                return server
        time.sleep(0.2)
    raise BenchError(f"seldon-core not ready in {START_TIMEOUT_S:.0f} s:\n{log.read_text()[-2000:]}")


def probabilities(server: Server) -> list[float]:
    """The three probabilities a server answers for BODY; anything else is an error."""
    status, raw = request(server.port, "POST", PATH, BODY.encode())
    if status != 200:
        raise BenchError(f"{server.name}: POST {PATH} answered {status}: {raw[:300]!r}")
    try:
        data = json.loads(raw)["data"]
        rows = data["ndarray"] if "ndarray" in data else [data["tensor"]["values"]]
        values = [float(v) for v in rows[0]]
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise BenchError(f"{server.name}: not a Seldon answer ({exc!r}): {raw[:300]!r}") from None
    if len(rows) != 1 or len(values) != 3:
        raise BenchError(f"{server.name}: expected one row of 3 probabilities: {raw[:300]!r}")
    print(f"{server.name}: 200 {raw.decode()}")
    return values


def stop_strays() -> None:
    """Kill the process group of any child of ours that leads its own (a server caught mid-start)."""
    for pid, _ in process_tree(os.getpid())[1:]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)


# ---------------------------------------------------------------------------------------------- wrk


def measure(server: Server, concurrency: int, seconds: int) -> Run:
    """One wrk run (bench/v2_iris.lua posting BODY as JSON) and the server tree's peak RSS meanwhile."""
    threads = 1 if concurrency == 1 else 2
    command = [
        "wrk", f"-t{threads}", f"-c{concurrency}", f"-d{seconds}s", "--timeout", WRK_TIMEOUT,
        "-s", str(LUA), server.url,
    ]  # fmt: skip
    env = {**os.environ, "V2_IRIS_BODY": BODY}
    with PeakRss(server.process.pid) as rss:
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    match = RESULT.search(done.stdout)
    if done.returncode != 0 or match is None:
        raise BenchError(f"wrk failed (exit {done.returncode}): {done.stdout}{done.stderr}")
    raw = json.loads(match.group(1))
    errors = sum(raw[key] for key in ("non_2xx", "connect_errors", "read_errors", "write_errors", "timeouts"))
    return Run(
        rps=raw["requests"] / (raw["duration_us"] / 1e6),
        p50_ms=raw["p50_us"] / 1000,
        p99_ms=raw["p99_us"] / 1000,
        errors=errors,
        peak_rss=rss.peak_bytes,
    )


# ---------------------------------------------------------------------------------------- reporting


@dataclass(frozen=True)
class Cell:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    peak_rss_mib: float


def cell(server: Server, concurrency: int) -> Cell:
    runs = server.runs[concurrency]
    return Cell(
        rps=statistics.median(run.rps for run in runs),
        p50_ms=statistics.median(run.p50_ms for run in runs),
        p99_ms=statistics.median(run.p99_ms for run in runs),
        errors=sum(run.errors for run in runs),
        peak_rss_mib=max(run.peak_rss for run in runs) / 2**20,
    )


def table(servers: dict[str, Server]) -> tuple[list[str], bool]:
    """The table's lines and whether the target is met."""
    inferd, seldon = servers["inferd"], servers["seldon-core"]
    lines = [
        f"{'concurrency':>11}  {'server':<11}  {'req/s':>8}  {'p50 ms':>7}  {'p99 ms':>7}  "
        f"{'peak RSS MiB':>12}  {'errors':>6}  {'inferd / seldon-core':>20}"
    ]
    passed = None
    for concurrency in sorted(set(inferd.runs) & set(seldon.runs)):
        ours, theirs = cell(inferd, concurrency), cell(seldon, concurrency)
        ratio = ours.rps / theirs.rps if theirs.rps else float("inf")
        for name, one, shown in (("inferd", ours, f"{ratio:.2f}x"), ("seldon-core", theirs, "")):
            lines.append(
                f"{concurrency:>11}  {name:<11}  {one.rps:>8,.0f}  {one.p50_ms:>7.2f}  {one.p99_ms:>7.2f}  "
                f"{one.peak_rss_mib:>12.1f}  {one.errors:>6}  {shown:>20}".rstrip()
            )
        if concurrency == TARGET_CONCURRENCY:
            passed = ratio >= TARGET_RATIO and ours.p99_ms < theirs.p99_ms and not ours.errors + theirs.errors
    verdict = {True: "PASS", False: "FAIL", None: "FAIL (not measured)"}[passed]
    lines.append(
        f"target: at concurrency {TARGET_CONCURRENCY}, inferd >= {TARGET_RATIO:.0f}x seldon-core's req/s "
        f"and a lower p99, no errors: {verdict}"
    )
    return lines, passed is True


def machine() -> list[str]:
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "?")
    revision = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    return [
        f"# machine: {len(os.sched_getaffinity(0))} cores (nproc), {cpu}, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}, wrk on the same machine",
        f"# inferd {revision or '?'}, seldon-core {SELDON_VERSION} (its defaults: gunicorn, 1 worker, "
        "1 thread)",
    ]


def report(lines: list[str], args: argparse.Namespace) -> None:
    now = datetime.now(timezone.utc)
    header = [
        f"# bench/seldon_iris.py --duration {args.duration} --rounds {args.rounds} --concurrency "
        f"{' '.join(map(str, args.concurrency))}, {now:%Y-%m-%dT%H:%MZ}",
        *machine(),
        f"# POST {PATH} {BODY}, medians over the rounds; peak RSS: the server's process tree",
    ]
    text = "\n".join([*header, *lines]) + "\n"
    print("\n" + text, end="")
    path = ROOT / "bench" / "results" / f"seldon-{now:%Y-%m-%d}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f"wrote {path.relative_to(ROOT)}")


# --------------------------------------------------------------------------------------------- main


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def bench(args: argparse.Namespace, folder: Path, servers: dict[str, Server]) -> None:
    executable = ensure_seldon_env()
    (folder / "IrisModel.py").write_text(IRIS_MODEL.lstrip().format(saved=str(MODEL_JOBLIB)))
    process, base = start_inferd("IrisModel", "--dialect", "seldon", cwd=folder)
    servers["inferd"] = Server("inferd", process, urlsplit(base).port or 0)
    servers["seldon-core"] = start_seldon(executable, folder)
    ours, theirs = (probabilities(servers[name]) for name in SERVERS)
    if any(abs(a - b) > 1e-6 for a, b in zip(ours, theirs, strict=True)):
        raise BenchError(f"the servers disagree: inferd {ours}, seldon-core {theirs}")
    for concurrency in args.concurrency:
        for round_ in range(1, args.rounds + 1):
            for server in servers.values():
                measure(server, concurrency, args.warmup)
                run = measure(server, concurrency, args.duration)
                server.runs.setdefault(concurrency, []).append(run)
                print(
                    f"c{concurrency:<3} round {round_}  {server.name:<11}  {run.rps:8,.0f} req/s  "
                    f"p50 {run.p50_ms:7.2f} ms  p99 {run.p99_ms:7.2f} ms  errors {run.errors}",
                    flush=True,
                )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per measured run [10]")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of warm-up before each run [2]")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the two servers [3]")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is missing: sudo apt-get update && sudo apt-get install -y wrk", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    signal.signal(signal.SIGTERM, _interrupt)  # stop the servers on SIGTERM as on Ctrl+C
    servers: dict[str, Server] = {}
    status = 0
    with tempfile.TemporaryDirectory(prefix="seldon-iris-") as tmp:
        try:
            bench(args, Path(tmp), servers)
        except BenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 2
        except KeyboardInterrupt:
            print("\ninterrupted: stopping the servers; partial results follow", file=sys.stderr)
            status = 130
        finally:
            for server in servers.values():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(server.process.pid, signal.SIGTERM)  # seldon-core's main process alone lingers
                print(f"{server.name}: {stop(server.process)}")
            stop_strays()
    if len(servers) == len(SERVERS) and all(server.runs for server in servers.values()):
        lines, passed = table(servers)
        report(lines, args)
        status = status or (0 if passed else 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
