"""Ray on a shared cluster: what the server's own port costs when it forwards to its application at a
route prefix of the cluster's Serve proxy (``--ray-route-prefix``), against the same application
called at that prefix of the proxy directly, in the same run.

A Ray cluster is started for the run (a process holding ``ray.init(address="local")``, on loopback,
token authentication on); ``inferd serve examples/iris --engine ray`` deploys to it as the application
``inferd-bench`` at ``/inferd-bench`` (2 replicas of 0.5 CPU, as bench/ray_serve.py), the proxy on a
free port. "inferd" is the server's own port (its forwarder); "ray-proxy" is
``http://127.0.0.1:PROXY/inferd-bench/v2/...``: the same replicas, one hop fewer. Both must answer the
same; then, for each concurrency and round, wrk (bench/v2_iris.lua) loads one, then the other. The
table gives medians of req/s, p50 and p99, and the forwarded req/s as a ratio of the direct one;
written to bench/results/ray-shared-<date>.txt. Target: at concurrency 16, at least 0.9x.

    .venv/bin/python bench/ray_shared.py [--duration 10] [--rounds 3] [--concurrency 1 16]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import urlsplit

from loadgen import ROOT, start_inferd
from peers import PeerBench, Server, Target, json_body, load, run_against
from v2_iris import BODY, INFER_PATH, BenchError, free_port, request

TARGET = Target(concurrency=16, ratio=0.9, lower_p99=False)
REPLICAS, NUM_CPUS = 2, 0.5
APPLICATION = "inferd-bench"
TOKEN = {"RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0"}
CLUSTER = textwrap.dedent("""
    import sys
    import ray

    ray.init(address="local", include_dashboard=False, _node_ip_address="127.0.0.1",
             _temp_dir=sys.argv[1], num_cpus=4, logging_level="WARNING")
    print(ray.get_runtime_context().gcs_address, flush=True)
    sys.stdin.read()
""")


def start_cluster(folder: Path) -> tuple[subprocess.Popen[str], str]:
    """The cluster's holding process (its own session: stopping its group stops the cluster) and
    the cluster's address."""
    environment = {**os.environ, **TOKEN, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen(
        [sys.executable, "-c", CLUSTER, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=environment,
        start_new_session=True,
    )
    assert holder.stdout is not None
    address = holder.stdout.readline().strip()
    if not address:
        raise BenchError(f"the Ray cluster did not start (exit {holder.wait()})")
    return holder, address


def same_answer(servers: dict[str, Server]) -> None:
    answers = {}
    for server in servers.values():
        status, raw = request(server.port, "POST", server.path, BODY)
        if status != 200:
            raise BenchError(f"{server.name}: POST {server.path} answered {status}: {raw[:300]!r}")
        answers[server.name] = raw
    if len(set(answers.values())) != 1:
        raise BenchError(f"the two ways answer differently: {answers}")


def bench(args: argparse.Namespace, folder: Path, servers: dict[str, Server]) -> None:
    holder, address = start_cluster(folder)
    proxy = free_port()
    environment = {**os.environ, **TOKEN, "PYTHONPATH": str(ROOT)}
    ray_args = ("--engine", "ray", "--replicas", str(REPLICAS), "--ray-num-cpus", str(NUM_CPUS),
                "--ray-address", address, "--ray-app-name", APPLICATION,
                "--ray-route-prefix", f"/{APPLICATION}", "--ray-proxy-port", str(proxy))  # fmt: skip
    try:
        process, base = start_inferd(str(ROOT / "examples" / "iris"), *ray_args, cwd=ROOT, env=environment)
    except SystemExit as exc:
        holder.kill()
        raise BenchError(str(exc)) from None
    servers["inferd"] = Server("inferd", process, urlsplit(base).port or 0, INFER_PATH)
    servers["ray-proxy"] = Server("ray-proxy", holder, proxy, f"/{APPLICATION}{INFER_PATH}")
    same_answer(servers)
    load(args, servers, json_body(BODY.decode()))


def main() -> int:
    from importlib import metadata

    peer = (
        f"the same application at /{APPLICATION} of Ray Serve {metadata.version('ray')}'s proxy "
        f"({REPLICAS} replicas x {NUM_CPUS} CPU, a cluster of the run's own)"
    )
    what = f"POST {INFER_PATH} {BODY.decode()}: inferd's port (forwarding) vs the proxy at the prefix"
    return run_against(
        PeerBench(
            (__doc__ or "").splitlines()[0], "ray_shared.py", "ray-shared", "ray-proxy", peer, what, TARGET
        ),
        bench,
    )


if __name__ == "__main__":
    sys.exit(main())
