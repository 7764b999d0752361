"""Issue 24's targets for endpoints, through a real control process (``inferd platform serve``) and
its embedded gateway:

- canary accuracy: an endpoint at 90/10 over two services (the same model scaling by 1 and by 2, so
  each answer says where it came from); of 10,000 requests each service's share within 1 percentage
  point of its weight;
- a weight change (90/10 → 0/100) under load takes effect within 1 s (no request started after that
  reaches the old service) with no failed request;
- a rolling update under load at concurrency 16: zero failed requests while ``inferd deploy`` replaces
  a Cortex ONNX API's version (its handler changed), and answers of the new version after.

Load is a threaded httpx loop (``--concurrency`` threads, keep-alive), on the same cores as the
control process and the services.

    .venv/bin/python bench/platform_endpoints.py [--requests 10000] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inferd.platform.workflows import Control, Layout, Part, roll_out  # noqa: E402

READY = re.compile(r"inferd platform ready: api=(?P<api>\S+) gateway=(?P<gateway>http://\S+?)/e/")
V2_BODY = {"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1.0]}]}
SETOSA = {"sepal_length": 5.2, "sepal_width": 3.6, "petal_length": 1.4, "petal_width": 0.3}
SHARE_TARGET_PP = 1.0
SWITCH_TARGET_S = 1.0
SCALE = """
import inferd

FACTOR = {factor}


class Scale(inferd.Model):
    def predict(self, inputs):
        return {{"y": inputs["x"] * FACTOR}}
"""
CORTEX_YAML = """
- kind: api
  name: iris
  onnx: {model: iris.onnx, request_handler: handler.py}
"""
HANDLER = """
VERSION = {version!r}
KEYS = ["sepal_length", "sepal_width", "petal_length", "petal_width"]


def pre_inference(sample, signature, metadata):
    return {{signature[0].name: [sample[key] for key in KEYS]}}


def post_inference(prediction, signature, metadata):
    return {{"label": int(prediction[0][0]), "version": VERSION}}
"""


@contextmanager
def control_process(data: Path) -> Iterator[tuple[str, str]]:
    command = [sys.executable, "-m", "inferd", "platform", "serve", "--port", "0", "--gateway-port", "0"]
    command += ["--grpc-gateway-port", "0"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [*command, "--data-dir", str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    try:
        for line in process.stdout:
            match = READY.search(line)
            if match:
                threading.Thread(target=process.stdout.read, daemon=True).start()
                yield match["api"].removesuffix("/platform/v1"), match["gateway"]
                return
        raise SystemExit(f"the control process exited with {process.wait()}")
    finally:
        process.terminate()
        process.wait(60)


class Load:
    """``threads`` keep-alive clients sending until stopped; each answer kept as (start time, value)."""

    def __init__(
        self, send: Callable[[httpx.Client], httpx.Response], read: Callable[[Any], Any], threads: int
    ):
        self.send, self.read = send, read
        self.answers: list[tuple[float, Any]] = []
        self.failures: list[str] = []
        self.budget: int | None = None
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(threads)]
        self.lock = threading.Lock()

    def run(self) -> None:
        with httpx.Client(timeout=60) as http:
            while not self.stopping.is_set():
                with self.lock:
                    if self.budget is not None:
                        if self.budget <= 0:
                            return
                        self.budget -= 1
                started = time.monotonic()
                try:
                    answer = self.send(http)
                except httpx.HTTPError as exc:
                    self.failures.append(repr(exc))
                    continue
                if answer.status_code == 200:
                    self.answers.append((started, self.read(answer.json())))
                else:
                    self.failures.append(f"{answer.status_code} {answer.text[:200]}")

    def start(self, budget: int | None = None) -> Load:
        self.budget = budget
        for thread in self.threads:
            thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(120)


def scale_project(folder: Path, factor: float) -> Part:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "inferd.yaml").write_text("name: scale\n")
    (folder / "model.py").write_text(SCALE.format(factor=factor))
    return Part(f"x{int(factor)}", folder)


def canary(
    url: str, gateway: str, scratch: Path, requests: int, concurrency: int
) -> list[tuple[str, str, str, bool]]:
    a, b = scale_project(scratch / "a", 1.0), scale_project(scratch / "b", 2.0)
    with Control(url) as control:
        outcome = roll_out(control, Layout("canary", "canary", ((a, 90), (b, 10))))
        ids = dict(zip((1.0, 2.0), (sid for sid, _ in outcome.routes), strict=True))

        def send(http: httpx.Client) -> httpx.Response:
            return http.post(f"{gateway}/e/canary/v2/models/scale/infer", json=V2_BODY)

        def read(answer: Any) -> float:
            return float(answer["outputs"][0]["data"][0])

        load = Load(send, read, concurrency).start(budget=requests)
        for thread in load.threads:
            thread.join()
        shares = Counter(value for _, value in load.answers)
        total = sum(shares.values())
        rows = []
        for value, weight in ((1.0, 90), (2.0, 10)):
            share = 100 * shares[value] / total if total else 0.0
            ok = abs(share - weight) <= SHARE_TARGET_PP and not load.failures
            rows.append(
                (f"canary share of the {weight}% service", f"{share:.2f}% of {total}", f"{weight}±1 pp", ok)
            )

        switch = Load(send, read, concurrency).start()
        time.sleep(1.0)
        begun = time.monotonic()
        body = {"routes": [{"service": ids[1.0], "weight": 0}, {"service": ids[2.0], "weight": 100}]}
        control.call("PUT", "/deployments/canary/endpoints/canary", body)
        returned = time.monotonic() - begun
        time.sleep(1.0)
        switch.stop()
        last_old = max((at for at, value in switch.answers if value == 1.0), default=begun)
        effect = max(0.0, last_old - begun)
        ok = effect <= SWITCH_TARGET_S and not switch.failures
        failed = len(switch.failures)
        said = f"{effect * 1000:.1f} ms (PUT returned in {returned * 1000:.1f} ms), {failed} failed"
        rows.append(("weight change 90/10 -> 0/100 takes effect", said, "<= 1 s, 0 failed", ok))
        control.call(
            "PUT", "/deployments/canary/endpoints/canary", {"routes": [{"service": ids[2.0], "weight": 100}]}
        )
    return rows


def cortex_project(folder: Path, version: str) -> None:
    from tests.dialects.cortex.projects import iris_onnx

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cortex.yaml").write_text(textwrap.dedent(CORTEX_YAML).lstrip())
    (folder / "handler.py").write_text(HANDLER.format(version=version))
    if not (folder / "iris.onnx").exists():
        iris_onnx(folder / "iris.onnx")


def rolling_update(
    url: str, gateway: str, scratch: Path, concurrency: int
) -> list[tuple[str, str, str, bool]]:
    folder = scratch / "cortex"
    cortex_project(folder, "1")
    deploy = [sys.executable, "-m", "inferd", "deploy", str(folder), "--url", url]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.run(deploy, capture_output=True, text=True, env=env, timeout=300)
    if first.returncode:
        raise SystemExit(f"inferd deploy failed: {first.stderr}")

    def send(http: httpx.Client) -> httpx.Response:
        return http.post(f"{gateway}/e/iris/iris", json=SETOSA)

    load = Load(send, lambda answer: answer["version"], concurrency).start()
    time.sleep(2.0)
    cortex_project(folder, "2")
    begun = time.monotonic()
    second = subprocess.run(deploy, capture_output=True, text=True, env=env, timeout=300)
    took = time.monotonic() - begun
    time.sleep(2.0)
    load.stop()
    versions = Counter(value for _, value in load.answers)
    rate = len(load.answers) / (took + 4.0)
    newest = load.answers[-1][1] if load.answers else None
    ok = second.returncode == 0 and not load.failures and newest == "2"
    said = (
        f"{len(load.failures)} failed of {len(load.answers) + len(load.failures)} "
        f"(v1 {versions['1']}, v2 {versions['2']}; {rate:.0f} req/s; deploy {took:.1f} s)"
    )
    return [(f"rolling update under load (c={concurrency})", said, "0 failed, v2 after", ok)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="inferd-bench-") as scratch,
        control_process(Path(scratch) / "data") as (
            url,
            gateway,
        ),
    ):
        rows = canary(url, gateway, Path(scratch), args.requests, args.concurrency)
        rows += rolling_update(url, gateway, Path(scratch), args.concurrency)
        with Control(url) as control:
            for name in ("canary", "iris"):
                from inferd.platform.workflows.status import remove_deployment

                remove_deployment(control, name)
    width = max(len(row[0]) for row in rows)
    print(f"\n{'target':<{width}}  {'measured':<70}  wanted")
    for name, measured, wanted, _ in rows:
        print(f"{name:<{width}}  {measured:<70}  {wanted}")
    print()
    for name, _, _, ok in rows:
        print(f"{'PASS' if ok else 'FAIL'}: {name}")
    if not all(ok for *_, ok in rows):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
