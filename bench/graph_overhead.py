"""Issue 8's target: a three-node local graph (transformer, model, output transformer) adds at most
15% latency over the model alone, at concurrency 1.

Serves ``graph_pipeline/Scale`` alone (``inferd serve Scale --dialect seldon``) and the graph
``graph_pipeline/pipeline.yaml`` around it, both from this checkout (``python -m inferd``, one
worker, no gRPC), then sends one row as Seldon JSON to ``/api/v1.0/predictions`` of each, one request
at a time over one keep-alive connection, alternating rounds between the two so that load from
other processes hits both alike. Prints p50/p90/mean latency (as the client sees it) and the p50
ratio graph / model with PASS or FAIL.

    .venv/bin/python bench/graph_overhead.py [--rounds 10] [--requests 500]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PIPELINE = ROOT / "bench" / "graph_pipeline"
READY = re.compile(r"inferd ready: (http://\S+)")
BODY = b'{"data":{"ndarray":[[5.1,3.5,1.4,0.2]]}}'
TARGET = 1.15


@contextmanager
def served(*args: str) -> Iterator[str]:
    """``python -m inferd serve ARGS`` from this checkout (cwd first on sys.path) on a free port."""
    command = [sys.executable, "-m", "inferd", "serve", *args, "--port", "0", "--no-grpc"]
    env = {**os.environ, "PYTHONPATH": str(PIPELINE), "INFERD_LOG_LEVEL": "warning"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            match = READY.search(line)
            if match:
                yield match.group(1)
                return
        raise SystemExit(f"inferd exited with {process.wait()} before it was ready")
    finally:
        process.terminate()
        process.wait(timeout=30)


def latencies(client: httpx.Client, url: str, count: int) -> list[float]:
    found = []
    for _ in range(count):
        started = time.perf_counter()
        response = client.post(url, content=BODY, headers={"Content-Type": "application/json"})
        found.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise SystemExit(f"{url} answered {response.status_code}: {response.text}")
    return found


def summary(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    p50, p90 = ordered[len(ordered) // 2], ordered[int(len(ordered) * 0.9)]
    mean = statistics.fmean(values)
    return f"{name:<14} p50 {p50 * 1e3:7.3f} ms   p90 {p90 * 1e3:7.3f} ms   mean {mean * 1e3:7.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--requests", type=int, default=500, help="per server and round")
    options = parser.parse_args()
    with (
        served("Scale", "--dialect", "seldon") as model_url,
        served(str(PIPELINE / "pipeline.yaml")) as graph_url,
    ):
        urls = {
            "model alone": f"{model_url}/api/v1.0/predictions",
            "3-node graph": f"{graph_url}/api/v1.0/predictions",
        }
        with httpx.Client(trust_env=False, timeout=30) as client:
            expected = {"model alone": [[10.2, 7.0, 2.8, 0.4]], "3-node graph": [[-12.2, -9.0, -4.8, -2.4]]}
            for name, url in urls.items():
                answer = client.post(url, content=BODY, headers={"Content-Type": "application/json"}).json()
                got = [[round(v, 6) for v in row] for row in answer["data"]["ndarray"]]
                assert got == expected[name], (name, answer)
                latencies(client, url, 300)  # warm-up
            found: dict[str, list[float]] = {name: [] for name in urls}
            for _ in range(options.rounds):
                for name, url in urls.items():
                    found[name] += latencies(client, url, options.requests)
    for name, values in found.items():
        print(summary(name, values))
    ratio = statistics.median(found["3-node graph"]) / statistics.median(found["model alone"])
    verdict = "PASS" if ratio <= TARGET else "FAIL"
    print(f"p50 ratio graph / model: {ratio:.3f} (target <= {TARGET}) {verdict}")
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"{options.rounds} rounds x {options.requests} per server, concurrency 1; load average {load}")


if __name__ == "__main__":
    main()
