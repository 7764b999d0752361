"""``inferd deploy``: a ``cortex.yaml`` → one `Layout` per API, each a deployment and an endpoint named
after the API, its one route a service serving that API alone.

Each API's bundle is the project folder with its ``cortex.yaml`` rewritten to hold that API (and the
``kind: deployment`` resource, so the API's path stays what the file says: ``/e/API/DEPLOYMENT/API``,
or ``/e/API/API``). The file is checked with the Cortex dialect's own parser first, so a bad file
fails before anything is pushed.

What of ``compute`` and ``autoscaling`` maps (0.8-0.10 put replicas in ``compute``, later Cortex in
``autoscaling``):

- ``min_replicas``, ``max_replicas``, ``init_replicas`` and ``target_replica_concurrency`` (in either
  section) → the service's replicas (each an ``inferd serve`` of its own behind the endpoint), scaled
  by the platform's autoscaler; ``workers_per_replica`` (or ``processes_per_replica``) → each
  replica's workers. Cortex's ``window`` and stabilisation periods are the control process's
  settings (``INFERD_AUTOSCALE_*``), not each API's;
- ``compute.cpu`` (``200m``, ``1``, ``2.5``) → ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` and
  ``OPENBLAS_NUM_THREADS`` rounded up (numpy, TensorFlow and user code honour them; onnxruntime's own
  pool does not);
- ``compute.gpu: 0`` → ``CUDA_VISIBLE_DEVICES`` empty.

Not mapped: ``max_replica_concurrency``, the scale factors and tolerances, ``mem``, a positive
``gpu`` (the machine's GPUs stay visible).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from inferd.core.errors import TargetError
from inferd.platform.records import Scaling
from inferd.platform.workflows.layout import Layout, Part, WorkflowError

#: What the platform runs at most: more replicas than this on one machine only compete.
MOST_REPLICAS = 64


def cortex_layouts(target: Path, only: str | None = None) -> list[Layout]:
    """The layouts of the ``cortex.yaml`` at ``target`` (a file, or a folder holding one); ``only``
    keeps the API of that name."""
    import yaml

    from inferd.dialects.cortex.config import config_path, load_config, read_yaml

    path = config_path(str(target))
    if not path.is_file():
        raise WorkflowError(f"no cortex.yaml at {target}")
    try:
        load_config(path)
        resources = read_yaml(path)
    except TargetError as exc:
        raise WorkflowError(exc.message) from None
    deployments = [item for item in resources if item.get("kind") == "deployment"]
    apis = [item for item in resources if item.get("kind") == "api"]
    if only is not None:
        apis = [item for item in apis if item.get("name") == only]
        if not apis:
            raise WorkflowError(f"{path} has no api named {only!r}")
    layouts = []
    for api in apis:
        name = str(api["name"])
        text = yaml.safe_dump([*deployments, api], sort_keys=False)
        part = Part(
            name=name,
            folder=path.parent,
            target=path.name,
            dialect="cortex",
            files={path.name: text},
            workers=workers_of(api),
            environment=environment_of(api),
            scaling=scaling_of(api),
        )
        description = f"Cortex API {name} of {path}"
        layouts.append(Layout(name, name, ((part, 100),), description=description))
    return layouts


def _sections(api: dict[str, Any]) -> list[dict[str, Any]]:
    return [section for section in (api.get("autoscaling"), api.get("compute")) if isinstance(section, dict)]


def _first(api: dict[str, Any], *keys: str) -> Any:
    """The value of the first of ``keys`` found in ``autoscaling``, then ``compute``; None if none."""
    for key in keys:
        for section in _sections(api):
            if section.get(key) is not None:
                return section[key]
    return None


def _count(api: dict[str, Any], key: str, default: int) -> int:
    value = _first(api, key)
    if value is None:
        return default
    if not _whole(value):
        raise WorkflowError(f"autoscaling: {key}: {value!r} is not a whole number")
    return int(value)


def workers_of(api: dict[str, Any]) -> int:
    """Each replica's worker processes: ``workers_per_replica`` (``processes_per_replica``)."""
    per_replica = _first(api, "workers_per_replica", "processes_per_replica")
    return max(1, min(64, per_replica)) if _whole(per_replica) else 1


def scaling_of(api: dict[str, Any]) -> Scaling:
    """The replicas' bounds, first count and target. A realtime API never scales to zero: a
    ``min_replicas`` of 0 is 1 here. Without ``max_replicas`` the API does not scale (Cortex's
    default ceiling, 100, is more servers than one machine has cores); one beyond what one machine
    runs is capped."""
    low = max(1, _count(api, "min_replicas", 1))
    high = min(MOST_REPLICAS, max(low, _count(api, "max_replicas", low)))
    low = min(low, high)
    initial = min(high, max(low, _count(api, "init_replicas", low)))
    target = _first(api, "target_replica_concurrency")
    if target is None:
        target = workers_of(api)  # Cortex's default: processes_per_replica * threads_per_process
    if isinstance(target, bool) or not isinstance(target, int | float) or target <= 0:
        raise WorkflowError(f"autoscaling: target_replica_concurrency: {target!r} must be a number above 0")
    return Scaling(low, high, float(target), initial)


def environment_of(api: dict[str, Any]) -> dict[str, str]:
    compute = api.get("compute") if isinstance(api.get("compute"), dict) else {}
    assert isinstance(compute, dict)
    environment: dict[str, str] = {}
    cpu = cpus(compute.get("cpu"))
    if cpu is not None:
        threads = str(max(1, math.ceil(cpu)))
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            environment[name] = threads
    if compute.get("gpu") in (0, "0"):
        environment["CUDA_VISIBLE_DEVICES"] = ""
    return environment


def cpus(value: Any) -> float | None:
    """Kubernetes CPU quantities: ``200m`` is 0.2, ``1`` and ``1.5`` as written; None otherwise."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if value > 0 else None
    text = str(value).strip()
    try:
        found = float(text[:-1]) / 1000 if text.endswith("m") else float(text)
    except ValueError:
        raise WorkflowError(f"compute: cpu: {value!r} is not a CPU quantity (200m, 1, 2.5)") from None
    return found if found > 0 else None


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
