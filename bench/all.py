"""issue 7's benchmark suite: inferd and every peer on the same iris model, in one table.

Each row is a server started on free loopback ports, checked to give the model's own answer
(``examples/iris/model.joblib``: the label, and the probabilities where the server returns them),
then loaded by wrk at each concurrency (bench/v2_iris.py does the work: warm-up and measured runs,
CPU and peak-RSS sampling, the table, the targets, the results file). The rows, by group (``--only``
takes groups and rows):

- inferd: ``inferd-1w``, ``inferd-2w``, ``inferd-2w-batch`` (``inferd serve examples/iris``);
- floor: bench/floor_app.py, a bare Starlette app doing the same work, one process;
- mlserver: MLServer 1.7's sklearn runtime in-process (``mlserver``) and with 2 inference workers
  (``mlserver-workers``);
- kserve: a ``kserve.Model`` subclass under ``kserve.ModelServer`` (bench/kserve_app.py), V2 REST;
- bentoml: a ``@bentoml.service`` whose api takes the V2 body (bench/bentoml_app.py);
- ray: a ``@serve.deployment`` with a plain ``__call__`` (bench/ray_app.py);
- seldon: the Seldon class of bench/seldon_iris.py under inferd's Seldon dialect (``inferd-seldon``)
  and under ``seldon-core-microservice`` (``seldon-core``), on ``POST /api/v1.0/predictions``;
- deepaas: an iris DEEPaaS model module (four ``Float`` arguments) under inferd's DEEPaaS dialect
  (``inferd-deepaas``) and under ``deepaas-run`` (``deepaas-run``), on its predict route.

Every peer runs from its own venv under bench/.envs/, created on first use; one that fails to
install or start is reported as a failed row and the others still run.

    .venv/bin/python bench/all.py [--only NAMES] [--duration 10s] [--warmup 3s]
                                  [--concurrency 1,16,64] [--rounds 1] [--json PATH]
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from urllib.parse import urlencode

import deepaas_bench
import seldon_iris
import v2_iris
from v2_iris import (
    BENCH,
    FEATURES,
    HOST,
    MODEL_PATH,
    BenchError,
    Expected,
    Launch,
    Protocol,
    ServerSpec,
    close_to,
    ensure_env,
    free_port,
    inferd_command,
)

ENVS = BENCH / ".envs"
KSERVE_REQUIREMENTS = ("kserve>=0.21,<0.22", "joblib")
BENTOML_REQUIREMENTS = ("bentoml>=1.4,<1.5", "joblib")
RAY_REQUIREMENTS = ("ray[serve]>=2.60,<2.61", "joblib")
#: What every peer app is told: no usage reports (nothing leaves the machine), our bench/ importable.
PEER_ENV = {"BENTOML_DO_NOT_TRACK": "true", "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": str(BENCH)}


def _peer_env(workdir: Path) -> dict[str, str]:
    """Our environment plus PEER_ENV, with BentoML's home (its store) in ``workdir``."""
    return {**os.environ, **PEER_ENV, "BENTOML_HOME": str(workdir / "bentoml")}


# ------------------------------------------------------------------------------------ V2 JSON peers


def kserve_launch(workdir: Path, app: str = "kserve_app.py", options: tuple[str, ...] = ()) -> Launch:
    """bench/``app`` (a ``kserve.ModelServer`` script) from KServe's venv on free ports, per-request
    logs off, with KServe's ``options`` after ours."""
    python = ensure_env(ENVS / "kserve", "python", KSERVE_REQUIREMENTS)
    port = free_port()
    command = [
        str(python), str(BENCH / app), "--http_port", str(port), "--grpc_port", str(free_port()),
        "--enable_latency_logging", "false", *options,
    ]  # fmt: skip
    return Launch(command, BENCH, port, _peer_env(workdir))


def bentoml_launch(workdir: Path) -> Launch:
    executable = ensure_env(ENVS / "bentoml", "bentoml", BENTOML_REQUIREMENTS)
    port = free_port()
    command = [
        str(executable), "serve", "bentoml_app:Iris", "--working-dir", str(BENCH),
        "--host", HOST, "--port", str(port),
    ]  # fmt: skip
    return Launch(command, BENCH, port, _peer_env(workdir), ready_path="/readyz")


def ray_launch(workdir: Path) -> Launch:
    python = ensure_env(ENVS / "ray", "python", RAY_REQUIREMENTS)
    port = free_port()
    command = [str(python), str(BENCH / "ray_app.py"), str(port), str(workdir / "ray")]
    return Launch(command, BENCH, port, _peer_env(workdir))


# ------------------------------------------------------------------------------------------- Seldon


def check_seldon(raw: bytes, expected: Expected, probabilities: bool) -> None:
    """A Seldon answer holding the model's three probabilities."""
    values = seldon_iris.parse_probabilities(raw)
    if not close_to(values, expected.probabilities):
        raise BenchError(f"expected the probabilities {expected.probabilities}: {raw[:300]!r}")


SELDON = Protocol("Seldon", seldon_iris.PATH, seldon_iris.BODY.encode(), "/health/ping", check_seldon)


def inferd_seldon_launch(workdir: Path) -> Launch:
    seldon_iris.write_iris_model(workdir)
    return Launch(inferd_command("IrisModel", "--dialect", "seldon"), workdir, port=None)


def seldon_core_launch(workdir: Path) -> Launch:
    executable = seldon_iris.ensure_seldon_env()
    seldon_iris.write_iris_model(workdir)
    port = free_port()
    # its main process waits for its gunicorn, gRPC and metrics processes: stop them all at once
    return Launch(seldon_iris.seldon_command(executable, port), workdir, port, stop_group=True)


# ------------------------------------------------------------------------------------------ DEEPaaS

FEATURE_NAMES = ("sepal_length", "sepal_width", "petal_length", "petal_width")

IRIS_DEEPAAS = '''
"""The iris model of bench/all.py as a DEEPaaS model module, served by inferd and by deepaas-run."""

import joblib
from webargs import fields

CLASSIFIER = joblib.load({saved!r})
FEATURES = {features!r}


def get_metadata():
    return {{"name": "iris", "description": "scikit-learn's iris LogisticRegression"}}


def get_predict_args():
    return {{name: fields.Float(required=True) for name in FEATURES}}


def predict(**kwargs):
    probabilities = CLASSIFIER.predict_proba([[kwargs[name] for name in FEATURES]])[0]
    label = CLASSIFIER.classes_[probabilities.argmax()]
    return {{"label": int(label), "probabilities": probabilities.tolist()}}
'''


def check_deepaas(raw: bytes, expected: Expected, probabilities: bool) -> None:
    """A DEEPaaS answer, ``{"status": "OK", "predictions": {...}}``, with the label and probabilities."""
    try:
        answer = json.loads(raw)
        predictions = answer["predictions"]
        labels, values = [predictions["label"]], predictions["probabilities"]
    except (ValueError, KeyError, TypeError) as exc:
        raise BenchError(f"not the DEEPaaS answer of the iris model ({exc!r}): {raw[:300]!r}") from None
    if (
        answer.get("status") != "OK"
        or labels != expected.labels
        or not close_to(values, expected.probabilities)
    ):
        raise BenchError(f"expected {expected}: {raw[:300]!r}")


DEEPAAS = Protocol(
    "DEEPaaS",
    f"/v2/models/iris/predict/?{urlencode(dict(zip(FEATURE_NAMES, FEATURES[0], strict=True)))}",
    b"{}",
    deepaas_bench.READY_PATH,
    check_deepaas,
)


def _deepaas_env(workdir: Path) -> dict[str, str]:
    """The iris module installed as the ``iris`` entry point in ``workdir``; the servers' environment."""
    source = IRIS_DEEPAAS.format(saved=str(MODEL_PATH), features=FEATURE_NAMES)
    site = deepaas_bench.write_model(workdir, name="iris", module="irismodel", source=source)
    return deepaas_bench.environment(site, workdir)


def inferd_deepaas_launch(workdir: Path) -> Launch:
    env = _deepaas_env(workdir)
    options = ("--dialect", "deepaas", "--model-name", "iris", "--data-dir", str(workdir / "inferd-data"))
    return Launch(inferd_command(*options), workdir, None, env)


def deepaas_run_launch(workdir: Path) -> Launch:
    executable = deepaas_bench.ensure_deepaas_env()
    env, port = _deepaas_env(workdir), free_port()
    return Launch(deepaas_bench.deepaas_command(executable, port, "iris"), workdir, port, env)


# ---------------------------------------------------------------------------------------------- all

SERVERS = (
    *v2_iris.SERVERS,
    ServerSpec("kserve", "KServe 0.21", "kserve", kserve_launch),
    ServerSpec("bentoml", "BentoML 1.4", "bentoml", bentoml_launch),
    ServerSpec("ray-serve", "Ray Serve 2.60", "ray", ray_launch),
    ServerSpec(
        "inferd-seldon",
        "inferd, Seldon dialect",
        "seldon",
        inferd_seldon_launch,
        protocol=SELDON,
        counterpart=None,
    ),
    ServerSpec(
        "seldon-core",
        "seldon-core 1.18",
        "seldon",
        seldon_core_launch,
        protocol=SELDON,
        counterpart="inferd-seldon",
    ),
    ServerSpec(
        "inferd-deepaas",
        "inferd, DEEPaaS dialect",
        "deepaas",
        inferd_deepaas_launch,
        protocol=DEEPAAS,
        counterpart=None,
    ),
    ServerSpec(
        "deepaas-run",
        "deepaas-run 2.6",
        "deepaas",
        deepaas_run_launch,
        protocol=DEEPAAS,
        counterpart="inferd-deepaas",
    ),
)


if __name__ == "__main__":
    sys.exit(v2_iris.main(servers=SERVERS, script="all.py", results="all", description=__doc__ or ""))
