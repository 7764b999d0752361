"""DEEPaaS benchmark: inferd's DEEPaaS predict route against the real deepaas-run 2.6.0.

Both servers serve the same model, ``bench``: a module ``benchmodel`` written by this script into a
temporary folder together with a ``benchmodel-0.1.dist-info`` whose ``entry_points.txt`` declares it
in the ``deepaas.v2.model`` group (``bench = benchmodel``); the folder is on both servers' PYTHONPATH,
so both find the model by its entry point, as an installed package. The entry point is the module,
whose functions are the model (deepaas-run uses the entry point's object as it is): ``get_metadata()``,
``get_predict_args()`` declaring ``a`` and ``b`` as required webargs ``fields.Float``, and
``predict(**kwargs)`` answering ``{"sum": a + b}``.

- inferd: ``inferd serve --dialect deepaas --model-name bench --no-grpc --port 0 --data-dir TMP``
  (bench/loadgen.py).
- deepaas-run: ``deepaas-run --listen-ip 127.0.0.1 --listen-port P --model-name bench``, from its own
  venv ``bench/.envs/deepaas`` (gitignored), created on first use with ``deepaas==2.6.0`` (which
  brings aiohttp 3, webargs 5, marshmallow 3, oslo.config and stevedore) and ``setuptools<81``
  (webargs 5 and apispec 3 import distutils, gone from Python 3.12), plus joblib and our scikit-learn
  for the iris model bench/all.py serves with it. It runs in its default
  configuration: one aiohttp process logging every request (INFO), answering each predict in its
  pool of 1 worker process (multiprocessing, spawn), counted in its peak RSS.

Both must first answer ``POST /v2/models/bench/predict/?a=1&b=2`` with body ``{}`` (JSON; DEEPaaS
takes the arguments from the query string) with status 200 and ``{"status": "OK", "predictions":
{"sum": 3.0}}``. Then, for each concurrency, for each round, wrk (bench/v2_iris.lua with that body,
the query string in the URL) runs a warm-up and a measured run on one server, then on the other. The
table gives the medians over the rounds of req/s, p50 and p99 latency, the peak RSS of each server's
process tree during its measured runs, and inferd's req/s as a ratio of deepaas-run's; it is also
written, with the machine, to bench/results/deepaas-<date>.txt. Target: at concurrency 16, inferd >=
3x deepaas-run's req/s, no errors. Exit 0 on PASS, 1 on FAIL, 2 when the benchmark could not run.

    .venv/bin/python bench/deepaas_bench.py [--duration 10] [--rounds 3] [--concurrency 1 16 64]
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
from peers import HOST, PeerBench, Server, Target, json_body, load, run_against, wait_ready
from v2_iris import BenchError, ensure_env, free_port, request

MODEL = "bench"
PATH = f"/v2/models/{MODEL}/predict/?a=1&b=2"
BODY = "{}"
EXPECTED = {"status": "OK", "predictions": {"sum": 3.0}}
READY_PATH = "/v2/models/"
TARGET = Target(concurrency=16, ratio=3.0, lower_p99=False)
DEEPAAS_ENV = ROOT / "bench" / ".envs" / "deepaas"
DEEPAAS_VERSION = "2.6.0"
SERVERS = ("inferd", "deepaas-run")

BENCH_MODEL = '''
"""The model of bench/deepaas_bench.py: a DEEPaaS model as a module, served by both servers."""

from webargs import fields


def get_metadata():
    return {"name": "bench", "description": "adds a and b"}


def get_predict_args():
    return {"a": fields.Float(required=True), "b": fields.Float(required=True)}


def predict(**kwargs):
    return {"sum": kwargs["a"] + kwargs["b"]}
'''


# ------------------------------------------------------------------------------------------ servers


def write_model(
    folder: Path, name: str = MODEL, module: str = "benchmodel", source: str = BENCH_MODEL
) -> Path:
    """A model module ``module`` (``source``) as an installed package in ``folder``/site (module and
    dist-info) declaring it as the ``deepaas.v2.model`` entry point ``name``; that folder."""
    site = folder / "site"
    info = site / f"{module}-0.1.dist-info"
    info.mkdir(parents=True)
    (site / f"{module}.py").write_text(source.lstrip())
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[deepaas.v2.model]\n{name} = {module}\n")
    return site


def environment(site: Path, folder: Path) -> dict[str, str]:
    """Ours with ``site`` first on PYTHONPATH, and stevedore's entry-point cache kept in ``folder``."""
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "XDG_CACHE_HOME": str(folder / "cache")}


def ensure_deepaas_env() -> Path:
    """deepaas-run in its own venv, bench/.envs/deepaas, created on first use."""
    requirements = [f"deepaas=={DEEPAAS_VERSION}", "setuptools<81", "joblib"]
    return ensure_env(DEEPAAS_ENV, "deepaas-run", requirements)


def deepaas_command(executable: Path, port: int, model: str = MODEL) -> list[str]:
    """``deepaas-run --model-name MODEL`` in its default configuration, on ``port``."""
    return [str(executable), "--listen-ip", HOST, "--listen-port", str(port), "--model-name", model]


def start_deepaas(executable: Path, folder: Path, env: dict[str, str]) -> Server:
    """deepaas-run (deepaas_command), once it answers GET /v2/models/."""
    port = free_port()
    command = deepaas_command(executable, port)
    log = folder / "deepaas-run.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
            start_new_session=True,
        )  # fmt: skip
    return wait_ready(Server("deepaas-run", process, port, PATH), READY_PATH, log)


def check_answer(server: Server) -> None:
    """The server answers 200 with EXPECTED (as JSON: the two servers space it differently)."""
    status, raw = request(server.port, "POST", PATH, BODY.encode())
    if status != 200:
        raise BenchError(f"{server.name}: POST {PATH} answered {status}: {raw[:300]!r}")
    try:
        answer = json.loads(raw)
    except ValueError:
        raise BenchError(f"{server.name}: not JSON: {raw[:300]!r}") from None
    if answer != EXPECTED:
        raise BenchError(f"{server.name}: expected {json.dumps(EXPECTED)}, got {raw[:300]!r}")
    print(f"{server.name}: 200 {raw.decode()}")


# --------------------------------------------------------------------------------------------- main


def bench(args: argparse.Namespace, folder: Path, servers: dict[str, Server]) -> None:
    executable = ensure_deepaas_env()
    env = environment(write_model(folder), folder)
    data = folder / "inferd-data"
    options = ("--dialect", "deepaas", "--model-name", MODEL, "--data-dir", str(data))
    process, base = start_inferd(*options, cwd=folder, env=env)
    servers["inferd"] = Server("inferd", process, urlsplit(base).port or 0, PATH)
    servers["deepaas-run"] = start_deepaas(executable, folder, env)
    for name in SERVERS:
        check_answer(servers[name])
    load(args, servers, json_body(BODY))


def main() -> int:
    peer = f"deepaas-run {DEEPAAS_VERSION} (its defaults: aiohttp, 1 worker, predict in a pool of 1 process)"
    description = (__doc__ or "").splitlines()[0]
    what = f"POST {PATH} {BODY}"
    return run_against(
        PeerBench(
            description, "deepaas_bench.py", "deepaas", "deepaas-run", peer, what, TARGET, signal_groups=False
        ),
        bench,
    )


if __name__ == "__main__":
    sys.exit(main())
