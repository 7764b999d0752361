"""Ray bench: inferd on Ray Serve (``--engine ray``, 2 replicas) against Ray Serve's own idiomatic
deployment of the same iris model (bench/ray_peer.py), in the same run.

Both run on a local Ray of their own with the same knobs: 2 replicas of 0.5 CPU each (so both fit on
a 2-core machine), ``max_ongoing_requests`` 256, Ray's HTTP proxy in front. inferd serves
``examples/iris`` (its V2 route); the peer is a ``@serve.deployment`` whose ``__call__`` parses the
same V2 JSON body and runs the example's own ``Iris.predict``. Both must first answer the request
with status 200 and the same label and probabilities; then, for each concurrency, for each round,
wrk (bench/v2_iris.lua) runs a warm-up and a measured run on one, then on the other. The table gives
the medians of req/s, p50 and p99 latency, the peak RSS of each server's process tree (its local
Ray included), and inferd's req/s as a ratio of the peer's; it is written to bench/results/ray-<date>.txt.
Target: at concurrency 16, inferd >= 1x Ray Serve's own req/s. Exit 0 on PASS, 1 on FAIL, 2 when
the benchmark could not run.

inferd runs its app on each replica's event loop (``ray_user_code_thread`` off), where Ray Serve runs
a deployment's code on a thread of its own by default. With ``RAY_PEER_ON_LOOP=1`` the peer is run
that way too, to show what the setting alone is worth (written to bench/results/ray-on-loop-<date>.txt).
With ``RAY_HAPROXY=1`` both run behind Ray's HAProxy ingress instead of its Python proxy: inferd with
``--ray-haproxy``, the peer in the high-throughput mode of Ray's guides (``RAY_SERVE_ENABLE_HA_PROXY=1``,
``RAY_SERVE_THROUGHPUT_OPTIMIZED=1``); written to bench/results/ray-haproxy-<date>.txt. HAProxy binds
its statistics and metrics listeners on all interfaces (traffic still goes to 127.0.0.1 only).

    .venv/bin/python bench/ray_serve.py [--duration 10] [--rounds 3] [--concurrency 1 16 64]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from loadgen import ROOT, start_inferd
from peers import PeerBench, Server, Target, json_body, load, run_against
from v2_iris import BODY, INFER_PATH, BenchError, free_port, request

TARGET = Target(concurrency=16, ratio=1.0, lower_p99=False)
REPLICAS, NUM_CPUS, MAX_ONGOING = 2, 0.5, 256
PEER_ON_LOOP = os.environ.get("RAY_PEER_ON_LOOP") == "1"
HAPROXY = os.environ.get("RAY_HAPROXY") == "1"
READY_PREFIX = "ray-serve ready: "


def start_peer(folder: Path) -> Server:
    """bench/ray_peer.py on a free port, once it says its application is running."""
    port = free_port()
    modes = [mode for mode, on in (("loop", PEER_ON_LOOP), ("haproxy", HAPROXY)) if on]
    command = [sys.executable, str(ROOT / "bench" / "ray_peer.py"), str(port), str(REPLICAS), str(NUM_CPUS),
               str(MAX_ONGOING), *modes]  # fmt: skip
    log = folder / "ray-peer.log"
    with log.open("wb") as err:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True, cwd=ROOT
        )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(READY_PREFIX):
            return Server("ray-serve", process, port, INFER_PATH)
    raise BenchError(f"the Ray Serve peer exited with {process.wait()}:\n{log.read_text()[-2000:]}")


def answer(server: Server) -> tuple[list[int], list[float]]:
    status, raw = request(server.port, "POST", INFER_PATH, BODY)
    if status != 200:
        raise BenchError(f"{server.name}: POST {INFER_PATH} answered {status}: {raw[:300]!r}")
    outputs = {output["name"]: output["data"] for output in json.loads(raw)["outputs"]}
    print(f"{server.name}: 200 {raw.decode()}")
    return outputs["label"], outputs["probabilities"]


def bench(args: argparse.Namespace, folder: Path, servers: dict[str, Server]) -> None:
    # PYTHONPATH: this checkout's inferd, for the command and (handed on by the engine) its replicas.
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    ray_args = ("--engine", "ray", "--replicas", str(REPLICAS), "--ray-num-cpus", str(NUM_CPUS),
                *(["--ray-haproxy"] if HAPROXY else []))  # fmt: skip
    process, base = start_inferd(str(ROOT / "examples" / "iris"), *ray_args, cwd=ROOT, env=environment)
    servers["inferd"] = Server("inferd", process, urlsplit(base).port or 0, INFER_PATH)
    servers["ray-serve"] = start_peer(folder)
    ours, theirs = answer(servers["inferd"]), answer(servers["ray-serve"])
    if ours[0] != theirs[0] or any(abs(a - b) > 1e-6 for a, b in zip(ours[1], theirs[1], strict=True)):
        raise BenchError(f"the servers disagree: inferd {ours}, ray-serve {theirs}")
    load(args, servers, json_body(BODY.decode()))


def main() -> int:
    from importlib import metadata

    knobs = f"{REPLICAS} replicas x {NUM_CPUS} CPU, max_ongoing_requests {MAX_ONGOING}"
    if HAPROXY:
        where = "on the replica's loop, in Ray's high-throughput mode (HAProxy, throughput-optimized)"
    else:
        where = "on the replica's loop, as inferd" if PEER_ON_LOOP else "on Ray's user-code thread"
    peer = f"Ray Serve {metadata.version('ray')}'s own deployment ({knobs}, its code {where})"
    description = (__doc__ or "").splitlines()[0]
    results = "ray" + ("-haproxy" if HAPROXY else "") + ("-on-loop" if PEER_ON_LOOP else "")
    ingress = "Ray Serve's HAProxy ingress" if HAPROXY else "Ray Serve's HTTP proxy"
    what = f"POST {INFER_PATH} {BODY.decode()}, both through {ingress}, 2 replicas each"
    return run_against(
        PeerBench(description, "ray_serve.py", results, "ray-serve", peer, what, TARGET),
        bench,
    )


if __name__ == "__main__":
    sys.exit(main())
