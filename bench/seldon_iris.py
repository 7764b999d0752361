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
import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from loadgen import ROOT, start_inferd
from peers import PeerBench, Server, Target, json_body, load, run_against, wait_ready
from v2_iris import BenchError, ensure_env, free_port, request

PATH = "/api/v1.0/predictions"
BODY = '{"data":{"ndarray":[[5.1,3.5,1.4,0.2]]}}'
TARGET = Target(concurrency=16, ratio=3.0, lower_p99=True)
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


# ------------------------------------------------------------------------------------------ servers


def ensure_seldon_env() -> Path:
    """seldon-core in its own venv, bench/.envs/seldon, created on first use."""
    requirements = [f"seldon-core=={SELDON_VERSION}", "setuptools<81", "joblib"]
    return ensure_env(SELDON_ENV, "seldon-core-microservice", requirements)


def seldon_command(executable: Path, port: int) -> list[str]:
    """``seldon-core-microservice IrisModel`` in its default configuration, HTTP on ``port``."""
    return [
        str(executable), "IrisModel", "--service-type", "MODEL",
        "--http-port", str(port), "--grpc-port", str(free_port()), "--metrics-port", str(free_port()),
    ]  # fmt: skip


def write_iris_model(folder: Path) -> None:
    """IrisModel.py, the Seldon class both servers run, in ``folder`` (their cwd)."""
    (folder / "IrisModel.py").write_text(IRIS_MODEL.lstrip().format(saved=str(MODEL_JOBLIB)))


def start_seldon(executable: Path, folder: Path) -> Server:
    """seldon-core-microservice (seldon_command), once it answers /health/ping."""
    port = free_port()
    command = seldon_command(executable, port)
    log = folder / "seldon-core.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=folder, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
        )
    return wait_ready(Server("seldon-core", process, port, PATH), "/health/ping", log)


def probabilities(server: Server) -> list[float]:
    """The three probabilities a server answers for BODY; anything else is an error."""
    status, raw = request(server.port, "POST", PATH, BODY.encode())
    if status != 200:
        raise BenchError(f"{server.name}: POST {PATH} answered {status}: {raw[:300]!r}")
    try:
        values = parse_probabilities(raw)
    except BenchError as exc:
        raise BenchError(f"{server.name}: {exc}") from None
    print(f"{server.name}: 200 {raw.decode()}")
    return values


def parse_probabilities(raw: bytes) -> list[float]:
    """The one row of three probabilities of a Seldon answer (ndarray or tensor)."""
    try:
        data = json.loads(raw)["data"]
        rows = data["ndarray"] if "ndarray" in data else [data["tensor"]["values"]]
        values = [float(v) for v in rows[0]]
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise BenchError(f"not a Seldon answer ({exc!r}): {raw[:300]!r}") from None
    if len(rows) != 1 or len(values) != 3:
        raise BenchError(f"expected one row of 3 probabilities: {raw[:300]!r}")
    return values


# --------------------------------------------------------------------------------------------- main


def bench(args: argparse.Namespace, folder: Path, servers: dict[str, Server]) -> None:
    executable = ensure_seldon_env()
    write_iris_model(folder)
    process, base = start_inferd("IrisModel", "--dialect", "seldon", cwd=folder)
    servers["inferd"] = Server("inferd", process, urlsplit(base).port or 0, PATH)
    servers["seldon-core"] = start_seldon(executable, folder)
    ours, theirs = (probabilities(servers[name]) for name in SERVERS)
    if any(abs(a - b) > 1e-6 for a, b in zip(ours, theirs, strict=True)):
        raise BenchError(f"the servers disagree: inferd {ours}, seldon-core {theirs}")
    load(args, servers, json_body(BODY))


def main() -> int:
    peer = f"seldon-core {SELDON_VERSION} (its defaults: gunicorn, 1 worker, 1 thread)"
    description = (__doc__ or "").splitlines()[0]
    what = f"POST {PATH} {BODY}"
    return run_against(
        PeerBench(
            description, "seldon_iris.py", "seldon", "seldon-core", peer, what, TARGET, signal_groups=True
        ),
        bench,
    )


if __name__ == "__main__":
    sys.exit(main())
