"""``inferd apply FILE.yaml``: a SeldonDeployment or a KServe InferenceService → a `Layout` whose
deployment and endpoint are named after ``metadata.name``; the bundle of every service is the folder
the file sits in.

**SeldonDeployment**: each predictor is a service of inferd's graph dialect, serving a copy of the
file that holds that predictor alone (``<file>-<predictor>.yaml`` in the bundle), which is what
``inferd serve`` does with a SeldonDeployment (its first predictor). Its nodes run what the graph
dialect runs: a Seldon class named by a ``componentSpecs`` container's ``MODEL_NAME`` (or a node's
``target``) found in the file's folder, the built-in routers and combiners, remote nodes by
``endpoint.service_host``, and Seldon's SKLEARN_SERVER, XGBOOST_SERVER, LIGHTGBM_SERVER,
TENSORFLOW_SERVER, MLFLOW_SERVER and TRITON_SERVER (``implementation: SKLEARN_SERVER``...), whose
``modelUri`` is a folder inside the file's folder or in object storage (fetched by the service when
it starts, as a ``storageUri`` below); the prepackaged servers inferd cannot run (MLSERVER,
HUGGINGFACE_SERVER...) are refused before anything is pushed, naming the node and the
implementation. ``traffic`` weights the predictors (one predictor without ``traffic`` takes 100); a
predictor with ``shadow: true`` is the endpoint's shadow, mirroring every request, its answers
dropped. ``replicas`` → the service's replicas (a fixed count).

**InferenceService** (``serving.kserve.io``): ``spec.predictor`` is one service, given as

- ``containers`` whose command or args read ``inferd serve TARGET`` (what ``inferd export k8s``
  writes; ``/app/`` is the file's folder) with their ``env``;
- or a model (``model: {storageUri}``, or a framework block such as ``sklearn: {storageUri}``) whose
  ``storageUri`` is what ``inferd serve`` serves (a project, a model folder with ``inferd.yaml``, a
  repository): a path inside the file's folder, or a URI in object storage (``s3://``, ``gs://``,
  ``https://``) that the service's ``inferd serve`` fetches into its model cache when it starts, with
  the control process's credentials (nothing is fetched by ``inferd apply`` itself). A model file
  (``model.joblib``, ``model.bst``, ``model.onnx``...) is served by inferd's model-file runtimes,
  and a format they serve (``modelFormat.name`` or the framework block: ``sklearn``, ``xgboost``,
  ``lightgbm``, ``onnx``, ``tensorflow``, ``mlflow``) is given to the service as
  ``INFERD_MODEL_FORMAT``; ``triton``'s ``storageUri`` is a Triton model repository, served as a
  repository (``config.pbtxt`` folders); ``pmml`` is refused, saying why. Every model answers
  KServe's V1 protocol and V2, whatever ``protocolVersion`` says.

``minReplicas``/``maxReplicas`` → the service's replicas, scaled between them aiming at ``scaleTarget``
requests in flight per replica (the concurrency metric). ``canaryTrafficPercent: N`` gives the new
revision N % and the previously rolled-out one (the endpoint's service with the most weight) 100 - N %;
without it (or at 100) the new revision takes every request and the previous ones are stopped.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferd.core.errors import TargetError
from inferd.platform.records import Scaling
from inferd.platform.workflows.layout import Layout, Part, Previous, WorkflowError

if TYPE_CHECKING:
    from inferd.dialects.graph.spec import GraphSpec

#: Settings of the container that the platform chooses itself (a service listens on loopback).
PLACED_VARIABLES = frozenset({"INFERD_HOST", "INFERD_PORT", "INFERD_GRPC_PORT", "INFERD_GRPC_ENABLED"})
#: The folder ``inferd export k8s`` copies the project into.
IMAGE_DIR = "/app/"
FRAMEWORKS = ("sklearn", "onnx", "xgboost", "lightgbm", "tensorflow", "pytorch", "triton", "pmml", "paddle")
#: Model formats whose files inferd's model-file runtimes serve (docs/runtimes.md): a predictor naming
#: one (``model.modelFormat.name``, or its framework block) has its service told the format.
RUNTIME_FORMATS = ("sklearn", "xgboost", "lightgbm", "onnx", "tensorflow", "mlflow")
#: Why a format inferd has no runtime for is refused.
REFUSED_FORMATS = {
    "pmml": (
        "inferd has no PMML runtime: the maintained PMML evaluators (pypmml, jpmml-evaluator) run a Java "
        "VM, which inferd does not start; convert the model (to ONNX, or back to the library it came "
        "from) and name that format"
    ),
}


def manifest_layout(path: Path) -> Layout:
    import yaml

    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise WorkflowError(f"{path}: cannot read as YAML: {exc}") from None
    kind = document.get("kind") if isinstance(document, dict) else None
    if kind == "SeldonDeployment":
        return seldon_layout(path, document)
    if kind == "InferenceService":
        return kserve_layout(path, document)
    raise WorkflowError(f"{path}: expected a SeldonDeployment or an InferenceService, not kind {kind!r}")


def _name(path: Path, document: dict[str, Any]) -> str:
    name = (document.get("metadata") or {}).get("name")
    if not isinstance(name, str) or not name:
        raise WorkflowError(f"{path}: metadata.name is required: the endpoint is named after it")
    return name


# ---- SeldonDeployment


def seldon_layout(path: Path, document: dict[str, Any]) -> Layout:
    import yaml

    name = _name(path, document)
    spec = document.get("spec") or {}
    predictors = spec.get("predictors") if isinstance(spec, dict) else None
    if not isinstance(predictors, list) or not predictors or not all(isinstance(p, dict) for p in predictors):
        raise WorkflowError(f"{path}: a SeldonDeployment needs spec.predictors")
    routes: list[tuple[Part | Previous, int]] = []
    shadows: list[Part] = []
    for index, predictor in enumerate(predictors):
        label = str(predictor.get("name") or f"predictor-{index}")
        # what the predictor serves, without how traffic reaches it: a change of weights or of the
        # shadow keeps its version and its running service
        served = {key: value for key, value in predictor.items() if key not in ("traffic", "shadow")}
        single = {**document, "spec": {**spec, "predictors": [served]}}
        file = f"{path.stem}-{label}.yaml"
        text = yaml.safe_dump(single, sort_keys=False)
        _check_model_uris(path, label, _check_graph(path, label, text))
        count = _replicas(predictor, "replicas")
        folder = path.parent.resolve()
        fixed = Scaling(count, count)
        part = Part(label, folder, file, "graph", {file: text}, scaling=fixed, leave_out=(path.name,))
        if predictor.get("shadow") is True:
            shadows.append(part)
        else:
            routes.append((part, _traffic(path, predictor, label)))
    if len(shadows) > 1:
        raise WorkflowError(f"{path}: one shadow predictor per SeldonDeployment, not {len(shadows)}")
    if not routes:
        raise WorkflowError(f"{path}: every predictor is a shadow; one must take the traffic")
    if len(routes) == 1 and routes[0][1] < 0:
        routes = [(routes[0][0], 100)]
    routes = [(part, max(0, weight)) for part, weight in routes]
    total = sum(weight for _, weight in routes)
    if total != 100:
        raise WorkflowError(f"{path}: the predictors' traffic must sum to 100, not {total}")
    shadow = (shadows[0], 100) if shadows else None
    return Layout(name, name, tuple(routes), shadow, description=f"SeldonDeployment {name} of {path}")


def _traffic(path: Path, predictor: dict[str, Any], label: str) -> int:
    """The predictor's ``traffic``; -1 when it has none (100 if it is the only one, else 0)."""
    traffic = predictor.get("traffic")
    if traffic is None:
        return -1
    if isinstance(traffic, bool) or not isinstance(traffic, int) or not 0 <= traffic <= 100:
        raise WorkflowError(f"{path}: predictor {label!r}: traffic must be 0 to 100, not {traffic!r}")
    return traffic


def _check_graph(path: Path, predictor: str, text: str) -> GraphSpec:
    """What the graph dialect would refuse at start-up, refused now; else the graph."""
    from inferd.dialects.graph.spec import load

    with tempfile.TemporaryDirectory(prefix="inferd-apply-") as scratch:
        single = Path(scratch) / path.name
        single.write_text(text)
        try:
            return load(single)
        except TargetError as exc:
            said = exc.message.replace(str(single), str(path))
            raise WorkflowError(f"predictor {predictor!r}: {said}") from None


def _check_model_uris(path: Path, predictor: str, graph: GraphSpec) -> None:
    """Every prepackaged server's ``modelUri`` is in the bundle (a path inside the file's folder) or
    in object storage that the service fetches from."""
    for node in graph.root.walk():
        if node.model_uri is not None:
            _located(path, node.model_uri, f"predictor {predictor!r}, node {node.name!r}: modelUri")


def _replicas(section: dict[str, Any], key: str) -> int:
    value = section.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return min(64, value)
    return 1


def _kserve_scaling(predictor: dict[str, Any]) -> Scaling:
    """``minReplicas`` (0 is 1: no scaling to zero), ``maxReplicas`` (none: no scaling) and, with the
    concurrency metric (KServe's default), ``scaleTarget`` requests in flight per replica."""
    low = _replicas(predictor, "minReplicas")
    high = max(low, _replicas(predictor, "maxReplicas") if "maxReplicas" in predictor else low)
    target = predictor.get("scaleTarget")
    by_concurrency = predictor.get("scaleMetric", "concurrency") == "concurrency"
    if not by_concurrency or isinstance(target, bool) or not isinstance(target, int | float) or target <= 0:
        return Scaling(low, high)
    return Scaling(low, high, float(target))


# ---- KServe InferenceService


def kserve_layout(path: Path, document: dict[str, Any]) -> Layout:
    name = _name(path, document)
    predictor = (document.get("spec") or {}).get("predictor")
    if not isinstance(predictor, dict):
        raise WorkflowError(f"{path}: an InferenceService needs spec.predictor")
    target, environment = _container(path, predictor) or _storage(path, predictor)
    # a Triton storageUri is a model repository (model folders with config.pbtxt)
    dialect = (
        "repository" if _model_format(predictor) == "triton" and "containers" not in predictor else "auto"
    )
    part = Part(
        name,
        path.parent.resolve(),
        target,
        dialect,
        scaling=_kserve_scaling(predictor),
        environment=environment,
        leave_out=(path.name,),
    )
    canary = predictor.get("canaryTrafficPercent")
    if canary is None or canary == 100:
        routes: tuple[tuple[Part | Previous, int], ...] = ((part, 100),)
    elif isinstance(canary, bool) or not isinstance(canary, int) or not 0 <= canary <= 100:
        raise WorkflowError(f"{path}: canaryTrafficPercent must be 0 to 100, not {canary!r}")
    else:
        routes = ((Previous(), 100 - canary), (part, canary))
    return Layout(name, name, routes, description=f"InferenceService {name} of {path}")


def _container(path: Path, predictor: dict[str, Any]) -> tuple[str, dict[str, str]] | None:
    containers = predictor.get("containers")
    if not containers:
        return None
    container = containers[0] if isinstance(containers, list) and isinstance(containers[0], dict) else {}
    words = [str(word) for word in [*(container.get("command") or []), *(container.get("args") or [])]]
    if "serve" not in words or words.index("serve") + 1 >= len(words):
        raise WorkflowError(
            f"{path}: the predictor's container must run 'inferd serve TARGET' (as inferd export k8s "
            f"writes it), not {words or '(no command)'}"
        )
    target = words[words.index("serve") + 1].removeprefix(IMAGE_DIR) or "."
    environment = {
        str(item["name"]): str(item.get("value", ""))
        for item in container.get("env") or []
        if isinstance(item, dict) and item.get("name") and item["name"] not in PLACED_VARIABLES
    }
    return _inside(path, target), environment


def _storage(path: Path, predictor: dict[str, Any]) -> tuple[str, dict[str, str]]:
    blocks = [predictor.get("model"), *(predictor.get(key) for key in FRAMEWORKS)]
    uri = next((b.get("storageUri") for b in blocks if isinstance(b, dict) and b.get("storageUri")), None)
    if not isinstance(uri, str):
        raise WorkflowError(
            f"{path}: the predictor names no model: give model.storageUri (a path beside the file) "
            "or a container running inferd serve"
        )
    named = _model_format(predictor)
    if named in REFUSED_FORMATS:
        raise WorkflowError(f"{path}: the predictor's model is {named}: {REFUSED_FORMATS[named]}")
    environment = {"INFERD_MODEL_FORMAT": named} if named in RUNTIME_FORMATS else {}
    return _located(path, uri, "storageUri"), environment


def _model_format(predictor: dict[str, Any]) -> str | None:
    """The format the predictor names: ``model.modelFormat.name``, else its framework block's key."""
    model = predictor.get("model")
    if isinstance(model, dict):
        found = model.get("modelFormat")
        name = found.get("name") if isinstance(found, dict) else None
        return str(name).lower() if name else None
    return next((key for key in FRAMEWORKS if isinstance(predictor.get(key), dict)), None)


def _located(path: Path, uri: str, what: str) -> str:
    """A model's URI as the service is given it: a path inside the file's folder (which is deployed),
    or a URI in object storage, which the service's ``inferd serve`` fetches when it starts, with the
    control process's credentials."""
    from inferd.storage.backends import BACKENDS
    from inferd.storage.locations import local_path, scheme

    local = local_path(uri)
    if local is None:
        if scheme(uri) not in BACKENDS:
            known = ", ".join(f"{name}://" for name in BACKENDS)
            raise WorkflowError(
                f"{path}: {what} {uri!r}: unknown scheme; use a path beside the file or {known}"
            )
        return uri
    return _inside(path, str(local))


def _inside(path: Path, target: str) -> str:
    folder = path.parent.resolve()
    file = target.split(":", 1)[0] if ":" in target and not target.startswith("/") else target
    resolved = (folder / file).resolve()
    if resolved != folder and folder not in resolved.parents:
        raise WorkflowError(f"{path}: {target!r} is not inside {folder}, which is what gets deployed")
    if not resolved.exists():
        raise WorkflowError(f"{path}: {target!r} does not exist in {folder}")
    return target
