"""Many models per server (issue 23): a model repository of ``--models`` small models served with
``--max-loaded-models``, requests spread over all of them, against the same server answering one
hot model, and a server keeping every model loaded.

Each model folder holds an ``inferd.yaml`` and a ``model.py`` whose model loads its own weights file
(``--weights-mib`` MiB of float32, so what is loaded shows in the server's memory) and answers
``x @ w`` for a 1x4 input. Runs, each after a warm-up, with wrk at ``--concurrency``:

- hot: every request to one model (loaded): the p99 a warm model has;
- spread: each request to a model picked uniformly from all of them (most are not loaded when
  called: they load, and the least recently used are unloaded);
- skewed: ``--hot-share`` of the requests on ``--max-loaded`` models, the rest spread over all;
- every model loaded (no limit), spread: the memory the limit saves.

Targets: no errors; the spread runs' p99 within 3x the hot p99; peak RSS with the limit below the
unlimited server's and within what the limit allows (the idle server plus that many weights, +25%).
With ``--rounds N`` every run is repeated N times (fresh servers each round); the table shows the
medians, and each ratio is the median of the ratios measured within one round.

    .venv/bin/python bench/repository_multiplex.py [--models 50] [--max-loaded 10] [--seconds 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
from loadgen import ROOT, start_inferd
from v2_iris import PeakRss, rss_bytes

LUA = ROOT / "bench" / "repository_spread.lua"
BODY = '{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[[1,2,3,4]]}]}'
MODEL = '''
    """One model of the benchmark repository: its weights file, loaded into memory."""

    from pathlib import Path

    import numpy as np

    import inferd


    class Weights(inferd.Model):
        def load(self) -> None:
            self.weights = np.load(Path(__file__).parent / "weights.npy")

        def predict(self, inputs):
            x = inputs["x"].astype(np.float32)
            return {"y": x @ self.weights[:4, :3]}
'''


@dataclass
class Run:
    name: str
    rps: float
    p50_ms: float
    p99_ms: float
    failures: int
    peak_mib: float
    #: p99 over the hot run's p99 of the same round (the median of the rounds' in a summary).
    ratio: float = 0.0


def make_repository(folder: Path, models: int, weights_mib: float) -> None:
    rows = max(4, int(weights_mib * 2**20 / 4 / 256))
    random = np.random.default_rng(0)
    for index in range(models):
        model = folder / f"m{index:02d}"
        model.mkdir(parents=True)
        (model / "inferd.yaml").write_text("dialect: native\ntarget: model.py\n")
        (model / "model.py").write_text(textwrap.dedent(MODEL))
        np.save(model / "weights.npy", random.random((rows, 256), dtype=np.float32))


def wrk(url: str, concurrency: int, seconds: int, env: dict[str, str]) -> dict[str, int]:
    threads = 1 if concurrency == 1 else 2
    command = [
        "wrk",
        f"-t{threads}",
        f"-c{concurrency}",
        f"-d{seconds}s",
        "--timeout",
        "30s",
        "-s",
        str(LUA),
        url,
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, check=True, env={**os.environ, "BODY": BODY, **env}
    )
    match = re.search(r"^SPREAD_RESULT (\{.*\})$", done.stdout, re.MULTILINE)
    assert match is not None, done.stdout + done.stderr
    result: dict[str, int] = json.loads(match.group(1))
    return result


def measure(
    name: str, process: subprocess.Popen[str], url: str, args: argparse.Namespace, env: dict[str, str]
) -> Run:
    wrk(url, args.concurrency, args.warmup, env)
    with PeakRss(process.pid) as rss:
        raw = wrk(url, args.concurrency, args.seconds, env)
    return Run(
        name,
        raw["requests"] / (raw["duration_us"] / 1e6),
        raw["p50_us"] / 1000,
        raw["p99_us"] / 1000,
        raw["errors"] + raw["non_2xx"],
        rss.peak_bytes / 2**20,
    )


def serve(repository: Path, *more: str) -> tuple[subprocess.Popen[str], str]:
    process, url = start_inferd("--repository", str(repository), *more)
    with httpx.Client(base_url=url, timeout=60) as http:  # every model answers once before the runs
        for index in range(len(list(repository.iterdir()))):
            answer = http.post(
                f"/v2/models/m{index:02d}/infer", content=BODY, headers={"content-type": "application/json"}
            )
            answer.raise_for_status()
    return process, url


def stop(process: subprocess.Popen[str]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--max-loaded", type=int, default=10)
    parser.add_argument("--weights-mib", type=float, default=4.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--hot-share", type=float, default=0.9)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="inferd-bench-repo-") as temp:
        repository = Path(temp) / "models"
        make_repository(repository, args.models, args.weights_mib)
        limit = ("--max-loaded-models", str(args.max_loaded))
        process, _ = start_inferd("--repository", str(repository), *limit)
        idle_mib = rss_bytes(process.pid) / 2**20
        stop(process)
        rounds = [one_round(repository, args) for _ in range(args.rounds)]
    for number, runs in enumerate(rounds, 1):
        ratios = ", ".join(f"{run.name.split(':')[0]} {run.ratio:.2f}x" for run in runs[1:])
        print(f"# round {number}: hot p99 {runs[0].p99_ms:.2f} ms; p99 / hot: {ratios}")
    report([median(runs) for runs in zip(*rounds, strict=True)], args, idle_mib)


def one_round(repository: Path, args: argparse.Namespace) -> list[Run]:
    """Hot, spread and skewed on a server with the limit, then spread on one without."""
    everywhere = {"MODELS": str(args.models)}
    runs = []
    process, url = serve(repository, "--max-loaded-models", str(args.max_loaded))
    try:
        runs.append(measure("hot: one model", process, url, args, {"MODELS": "1"}))
        runs.append(measure(f"spread over {args.models}", process, url, args, everywhere))
        skew = {**everywhere, "HOT": str(args.max_loaded), "HOT_SHARE": str(args.hot_share)}
        runs.append(measure(f"skewed: {args.hot_share:.0%} on {args.max_loaded}", process, url, args, skew))
    finally:
        stop(process)
    process, url = serve(repository)
    try:
        runs.append(measure(f"no limit, spread over {args.models}", process, url, args, everywhere))
    finally:
        stop(process)
    for run in runs:
        run.ratio = run.p99_ms / runs[0].p99_ms
    return runs


def median(runs: tuple[Run, ...]) -> Run:
    """One run's figures over the rounds: medians, and every failure counted."""
    return Run(
        runs[0].name,
        statistics.median(run.rps for run in runs),
        statistics.median(run.p50_ms for run in runs),
        statistics.median(run.p99_ms for run in runs),
        sum(run.failures for run in runs),
        statistics.median(run.peak_mib for run in runs),
        statistics.median(run.ratio for run in runs),
    )


def report(runs: list[Run], args: argparse.Namespace, idle_mib: float) -> None:
    print(
        f"# bench/repository_multiplex.py: {args.models} models of {args.weights_mib:g} MiB weights, "
        f"--max-loaded-models {args.max_loaded}, wrk c{args.concurrency}, {args.seconds} s per run, "
        f"{os.cpu_count()} cores" + (f", medians of {args.rounds} rounds" if args.rounds > 1 else "")
    )
    columns = ("req/s", "p50 ms", "p99 ms", "p99 / hot", "failed", "peak MiB")
    print(f"{'run':<32} " + " ".join(f"{column:>9}" for column in columns))
    for run in runs:
        print(
            f"{run.name:<32} {run.rps:>9,.0f} {run.p50_ms:>9.2f} {run.p99_ms:>9.2f} "
            f"{run.ratio:>8.2f}x {run.failures:>9} {run.peak_mib:>9.0f}"
        )
    limited = max(run.peak_mib for run in runs[:3])
    allowed = (idle_mib + args.max_loaded * args.weights_mib) * 1.25
    checks = [
        ("no failed requests", all(run.failures == 0 for run in runs)),
        (f"spread p99 <= 3x hot p99 ({runs[1].ratio:.2f}x)", runs[1].ratio <= 3),
        (f"skewed p99 <= 3x hot p99 ({runs[2].ratio:.2f}x)", runs[2].ratio <= 3),
        (f"peak RSS with the limit {limited:.0f} MiB <= {allowed:.0f} MiB allowed", limited <= allowed),
        (f"and below the unlimited server's {runs[3].peak_mib:.0f} MiB", limited < runs[3].peak_mib),
    ]
    for check, passed in checks:
        print(f"{'PASS' if passed else 'FAIL'}  {check}")


if __name__ == "__main__":
    main()
