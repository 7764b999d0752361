"""Issue 39's target for ABEJA training jobs: a job's start-up overhead, from ``create-job`` to its
``handler(context)`` running, against a plain ``python -c`` of the same handler.

One control process (``inferd platform serve``, with a token) holds a job definition whose version is
a folder with ``train.py``: a handler that writes ``time.time()`` to a file named by its environment
and returns. Each round, in alternation (which goes first alternates too):

- **job**: the clock read, then ``POST .../training/definitions/bench/versions/1/jobs`` (what
  ``abeja training create-job`` sends); the time is the handler's stamp minus that reading: the
  request, the record, the version unpacked into the job's work folder, the process started and the
  launcher importing the handler;
- **plain**: the clock read, then ``python -c "import train; train.handler({})"`` in the same folder
  with the same Python, to the handler's stamp (the floor: a Python starting and importing it).

The ratio job / plain is taken per round (both measured on the same state of the machine); the table
gives each side's median and the median of the ratios. Target: at most 1.5x.

A job after the first of its Python runs in a spare launcher started ahead
(`inferd.platform.abeja.training_spares`); the first job of a control process has none yet and starts
its Python itself: its time is printed on its own line (the warm-up rounds are not in the table).

    .venv/bin/python bench/training_startup.py [--rounds 21]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import re
import secrets
import statistics
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.5
ORG = "/organizations/1000000000000"
READY = re.compile(r"inferd platform ready: api=(?P<api>\S+) ")
TRAIN = textwrap.dedent("""
    import os
    import time


    def handler(context):
        stamp = time.time()
        with open(os.environ["BENCH_STAMP"], "w") as file:
            file.write(repr(stamp))
""")


@contextmanager
def control_process(data: Path, token: str) -> Iterator[str]:
    command = [sys.executable, "-m", "inferd", "platform", "serve", "--port", "0", "--gateway-port", "0"]
    command += ["--grpc-gateway-port", "0", "--data-dir", str(data)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "INFERD_AUTH_TOKENS": token}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert process.stdout is not None
    try:
        for line in process.stdout:
            match = READY.search(line)
            if match:
                threading.Thread(target=process.stdout.read, daemon=True).start()
                yield match["api"].removesuffix("/platform/v1")
                return
        raise SystemExit(f"the control process exited with {process.wait()}")
    finally:
        process.terminate()
        process.wait(60)


def stamp_of(path: Path, deadline: float) -> float:
    """The handler's stamp, once its file is written whole (polled: the stamp, not the poll, counts)."""
    while time.monotonic() < deadline:
        try:
            text = path.read_text()
        except FileNotFoundError:
            text = ""
        if text.endswith(("0", "1", "2", "3", "4", "5", "6", "7", "8", "9")) and "." in text:
            return float(text)
        time.sleep(0.0005)
    raise SystemExit(f"the handler wrote no stamp to {path}")


def wait_final(http: httpx.Client, job: str) -> None:
    deadline = time.monotonic() + 60
    while http.get(f"{ORG}/training/definitions/bench/jobs/{job}").json()["status"] not in (
        "Complete",
        "Failed",
        "Stopped",
    ):
        if time.monotonic() > deadline:
            raise SystemExit(f"job {job} did not finish")
        time.sleep(0.01)


def job_round(http: httpx.Client, stamps: Path, index: int) -> float:
    stamp = stamps / f"job-{index}"
    body = {"environment": {"BENCH_STAMP": str(stamp)}}
    start = time.time()
    created = http.post(f"{ORG}/training/definitions/bench/versions/1/jobs", json=body)
    if created.status_code != 200:
        raise SystemExit(f"create-job answered {created.status_code}: {created.text}")
    took = stamp_of(stamp, time.monotonic() + 60) - start
    wait_final(http, created.json()["training_job_id"])  # its slot free before the next round
    return took


def plain_round(folder: Path, stamps: Path, index: int) -> float:
    stamp = stamps / f"plain-{index}"
    env = {**os.environ, "BENCH_STAMP": str(stamp)}
    start = time.time()
    subprocess.run([sys.executable, "-c", "import train; train.handler({})"], cwd=folder, env=env, check=True)
    return stamp_of(stamp, time.monotonic() + 60) - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    token = secrets.token_urlsafe(24)
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="inferd-bench-training-") as tmp:
        root = Path(tmp)
        folder, stamps = root / "project", root / "stamps"
        folder.mkdir()
        stamps.mkdir()
        (folder / "train.py").write_text(TRAIN)
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w:gz") as tar:
            tar.add(folder / "train.py", arcname="train.py")
        with (
            control_process(root / "data", token) as base,
            httpx.Client(base_url=base, headers={"authorization": f"Bearer {token}"}, timeout=60) as http,
        ):
            assert http.post(f"{ORG}/training/definitions", json={"name": "bench"}).status_code == 200
            files = {
                "source_code": ("train.tar.gz", archive.getvalue(), "application/gzip"),
                "parameters": (None, json.dumps({"handler": "train:handler"})),
            }
            version = http.post(f"{ORG}/training/definitions/bench/versions", files=files)
            assert version.status_code == 200, version.text
            first = job_round(http, stamps, 0 - 100)  # no spare yet: the job's Python starts now
            first_plain = plain_round(folder, stamps, 0 - 100)
            for index in range(args.warmup):
                job_round(http, stamps, -1 - index)
                plain_round(folder, stamps, -1 - index)
            jobs, plains, ratios = [], [], []
            for index in range(args.rounds):
                if index % 2 == 0:
                    job, plain = job_round(http, stamps, index), plain_round(folder, stamps, index)
                else:
                    plain, job = plain_round(folder, stamps, index), job_round(http, stamps, index)
                jobs.append(job)
                plains.append(plain)
                ratios.append(job / plain)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    moment = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
    print(
        f"# bench/training_startup.py --rounds {args.rounds} (issue 39), inferd {commit}, {moment}, "
        f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start; {os.cpu_count()} cores"
    )
    print(f"# Python {platform.python_version()}, {platform.system()} {platform.release()}")
    print(f"{'':<34}{'median':>10}{'min':>10}{'max':>10}")
    for name, values in (("create-job to handler (ms)", jobs), ("python -c to handler (ms)", plains)):
        row = [statistics.median(values) * 1000, min(values) * 1000, max(values) * 1000]
        print(f"{name:<34}" + "".join(f"{value:>10.1f}" for value in row))
    cold = f"{'first job, no spare yet (ms)':<34}{first * 1000:>10.1f}"
    print(f"{cold}   (python -c then: {first_plain * 1000:.1f} ms)")
    row = [statistics.median(ratios), min(ratios), max(ratios)]
    print(f"{'job / plain (per round)':<34}" + "".join(f"{value:>9.2f}x" for value in row))
    median = statistics.median(ratios)
    verdict = "PASS" if median <= TARGET else "FAIL"
    print(f"target: a job's start-up <= {TARGET}x a plain python -c of its handler (median ratio): {verdict}")


if __name__ == "__main__":
    main()
