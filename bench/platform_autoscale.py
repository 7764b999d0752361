"""Autoscaling through a real control process (``inferd platform serve``) and its embedded gateway, on
a model that holds the CPU (a 5 ms Python loop a request, one worker a replica: a replica serves one
request at a time):

- the same load (``--concurrency`` keep-alive clients through the endpoint) on a service of one fixed
  replica and on one scaled between 1 and ``--max-replicas`` (target 4 in flight per replica): the
  steady req/s and p50 of each once scaled, their ratio, and how long the scale up took;
- then the load stops but one client, and the service scales back to one replica: how long that
  took, and failed requests over the whole run (the target: none).

Each round runs both services in one control process (a fresh one per round); the figures are
medians of the rounds. Autoscaling settings are short (window 2 s, scale down after 3 s) so a round
takes seconds; the defaults (60 s, 300 s) only make it slower.

    flock /tmp/inferd-bench.lock .venv/bin/python bench/platform_autoscale.py [--seconds 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.platform_endpoints import V2_BODY, Load, control_process  # noqa: E402

MODEL = """
import os
import time

import inferd


class Busy(inferd.Model):
    def predict(self, inputs):
        until = time.perf_counter() + 0.005
        while time.perf_counter() < until:
            pass
        return {"pid": inputs["x"] * 0 + os.getpid()}
"""
SETTINGS = {
    "INFERD_AUTOSCALE_INTERVAL": "0.2",
    "INFERD_AUTOSCALE_WINDOW": "2",
    "INFERD_AUTOSCALE_UPSCALE_DELAY": "0",
    "INFERD_AUTOSCALE_DOWNSCALE_DELAY": "3",
}


def service(http: httpx.Client, deployment: str, version: str, **scaling: Any) -> str:
    created = http.post(
        f"/platform/v1/deployments/{deployment}/services", json={"version": version, **scaling}
    )
    created.raise_for_status()
    sid: str = created.json()["id"]
    wait(http, sid, lambda s: s["state"] == "running", 120)
    routes = {"routes": [{"service": sid, "weight": 100}]}
    http.put(f"/platform/v1/deployments/{deployment}/endpoints/{deployment}", json=routes).raise_for_status()
    return sid


def wait(http: httpx.Client, sid: str, done: Any, timeout: float) -> float:
    begun = time.monotonic()
    while not done(http.get(f"/platform/v1/services/{sid}").json()):
        if time.monotonic() - begun > timeout:
            raise SystemExit(f"service {sid} did not get there in {timeout:g} s")
        time.sleep(0.05)
    return time.monotonic() - begun


def measure(gateway: str, endpoint: str, concurrency: int, seconds: float) -> tuple[Load, float, float]:
    """A load of ``concurrency`` clients for ``seconds``: (the load, req/s, p50 ms)."""

    def send(client: httpx.Client) -> httpx.Response:
        return client.post(f"{gateway}/e/{endpoint}/v2/models/busy/infer", json=V2_BODY)

    timed: list[float] = []

    def read(answer: Any) -> int:  # the pid of the replica that answered
        return int(answer["outputs"][0]["data"][0])

    load = Load(lambda client: _timed(send, client, timed), read, concurrency).start()
    time.sleep(seconds)
    load.stop()
    return load, len(load.answers) / seconds, 1000 * statistics.median(timed) if timed else float("nan")


def _timed(send: Any, client: httpx.Client, timed: list[float]) -> httpx.Response:
    begun = time.perf_counter()
    answer: httpx.Response = send(client)
    timed.append(time.perf_counter() - begun)
    return answer


def one_round(scratch: Path, concurrency: int, seconds: float, most: int) -> dict[str, float]:
    folder = scratch / "busy"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "inferd.yaml").write_text("name: busy\n")
    (folder / "model.py").write_text(MODEL)
    os.environ.update(SETTINGS)
    with control_process(scratch / "data") as (url, gateway), httpx.Client(base_url=url, timeout=120) as http:
        versions = []
        for deployment in ("fixed", "scaled"):
            from inferd.platform.artifacts import pack

            archive = scratch / f"{deployment}.tar.gz"
            with archive.open("wb") as out:
                pack(folder, out)
            http.post("/platform/v1/deployments", json={"name": f"{deployment}-v"}).raise_for_status()
            with archive.open("rb") as data:
                pushed = http.post(
                    f"/platform/v1/deployments/{deployment}-v/versions",
                    data={"label": "1"},
                    files={"archive": ("a.tar.gz", data)},
                )
            pushed.raise_for_status()
            versions.append(pushed.json())
        # one deployment per service keeps their versions apart; the endpoints are named after them
        fixed = service(http, "fixed-v", versions[0]["id"], min_replicas=1, max_replicas=1)
        _, fixed_rps, fixed_p50 = measure(gateway, "fixed-v", concurrency, seconds)
        http.put(
            "/platform/v1/deployments/fixed-v/endpoints/fixed-v",
            json={"routes": [{"service": fixed, "weight": 0}]},
        )

        scaled = service(
            http, "scaled-v", versions[1]["id"], min_replicas=1, max_replicas=most, target_concurrency=4
        )
        warm = Load(
            lambda client: client.post(f"{gateway}/e/scaled-v/v2/models/busy/infer", json=V2_BODY),
            lambda answer: 0,
            concurrency,
        ).start()
        up = wait(http, scaled, lambda s: s["ready_replicas"] == most, 120)
        time.sleep(1.0)
        warm.stop()
        steady, scaled_rps, scaled_p50 = measure(gateway, "scaled-v", concurrency, seconds)
        light = Load(
            lambda client: client.post(f"{gateway}/e/scaled-v/v2/models/busy/infer", json=V2_BODY),
            lambda answer: 0,
            1,
        ).start()
        down = wait(http, scaled, lambda s: s["replicas"] == 1 and s["ready_replicas"] == 1, 120)
        light.stop()
        failed = len(warm.failures) + len(steady.failures) + len(light.failures)
        return {
            "fixed_rps": fixed_rps,
            "fixed_p50": fixed_p50,
            "scaled_rps": scaled_rps,
            "scaled_p50": scaled_p50,
            "ratio": scaled_rps / fixed_rps,
            "up_s": up,
            "down_s": down,
            "failed": failed,
            "pids": len({value for _, value in steady.answers}),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--max-replicas", type=int, default=3)
    args = parser.parse_args()
    rounds = []
    for number in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="inferd-autoscale-") as scratch:
            found = one_round(Path(scratch), args.concurrency, args.seconds, args.max_replicas)
        rounds.append(found)
        print(
            f"round {number + 1}: " + ", ".join(f"{key}={value:.2f}" for key, value in found.items()),
            flush=True,
        )
    median = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    failed = sum(r["failed"] for r in rounds)
    most = args.max_replicas
    lines = [
        f"{os.cpu_count()} cores, c={args.concurrency}, {args.seconds:g} s a load, {args.rounds} rounds",
        f"1 fixed replica:       {median['fixed_rps']:8.1f} req/s  p50 {median['fixed_p50']:6.2f} ms",
        f"autoscaled 1..{most}:       {median['scaled_rps']:8.1f} req/s  p50 {median['scaled_p50']:6.2f} ms",
        f"ratio autoscaled/fixed: {median['ratio']:.2f}x (same round, median of rounds)",
        f"scale up 1 -> {most} ready: {median['up_s']:.2f} s; back to 1 after it: {median['down_s']:.2f} s",
        f"replicas answering the steady load: {median['pids']:.0f}; failed requests, all rounds: {failed}",
    ]
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
