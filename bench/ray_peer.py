"""Ray Serve's own idiomatic deployment of the iris model, the peer of bench/ray_serve.py.

A ``@serve.deployment`` class whose ``__call__`` takes the Starlette request, parses the V2 JSON body,
runs the example's own ``Iris.predict`` (the same code and ``model.joblib`` as inferd) and returns a
dict, which Ray Serve encodes as JSON: the way Ray Serve's guides serve a scikit-learn model. It gets
the same Ray knobs as inferd's deployment (replicas, CPUs per replica, ``max_ongoing_requests``, no
access log) on a local Ray of its own, and serves ``POST /v2/models/iris/infer`` until SIGTERM. Its
code runs where Ray Serve runs it by default, on a thread of its own in each replica; with ``loop``,
on the replica's event loop, as inferd's deployment does. With ``haproxy``, Ray Serve runs in the
high-throughput mode of its guides (``RAY_SERVE_ENABLE_HA_PROXY=1`` and
``RAY_SERVE_THROUGHPUT_OPTIMIZED=1``): HAProxy in front, forwarding to the replicas' own HTTP servers.

    python bench/ray_peer.py PORT REPLICAS NUM_CPUS MAX_ONGOING_REQUESTS [loop] [haproxy]
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "iris" / "model.py"
ROUTE = "/v2/models/iris/infer"


def load_example() -> Any:
    """The example's own ``Iris``, loaded (in a replica: the example folder goes on its path)."""
    sys.path.insert(0, str(EXAMPLE.parent))
    from model import Iris

    model = Iris()
    model.load()
    return model


def v2_tensor(name: str, array: Any) -> dict[str, Any]:
    datatype = {"int64": "INT64", "float32": "FP32"}[str(array.dtype)]
    return {"name": name, "datatype": datatype, "shape": list(array.shape), "data": array.ravel().tolist()}


def main() -> None:
    port, replicas, num_cpus, max_ongoing = (
        int(sys.argv[1]),
        int(sys.argv[2]),
        float(sys.argv[3]),
        int(sys.argv[4]),
    )
    modes = set(sys.argv[5:])
    actor_options: dict[str, Any] = {"num_cpus": num_cpus}
    if "loop" in modes:  # else Ray's default: the code on a thread of its own
        actor_options["runtime_env"] = {"env_vars": {"RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "0"}}
    os.environ.update(RAY_USAGE_STATS_ENABLED="0", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
    if "haproxy" in modes:  # before ray.init: the local Ray's processes inherit them
        os.environ.update(RAY_SERVE_ENABLE_HA_PROXY="1", RAY_SERVE_THROUGHPUT_OPTIMIZED="1")
        # Stops within the bench's grace, as inferd's local Ray does (Ray's 30 s drain is for clusters).
        os.environ.setdefault("RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S", "5")
    import numpy as np
    import ray
    from ray import serve
    from starlette.requests import Request

    @serve.deployment(
        num_replicas=replicas,
        max_ongoing_requests=max_ongoing,
        ray_actor_options=actor_options,
        logging_config={"enable_access_log": False},  # as inferd's deployment, whose access log is off
    )
    class Iris:
        def __init__(self) -> None:
            self.model = load_example()

        async def __call__(self, request: Request) -> dict[str, Any]:
            tensor = (await request.json())["inputs"][0]
            features = np.asarray(tensor["data"], dtype=np.float32).reshape(tensor["shape"])
            outputs = self.model.predict({"input-0": features})
            return {
                "model_name": "iris",
                "outputs": [v2_tensor(name, array) for name, array in outputs.items()],
            }

    with tempfile.TemporaryDirectory(prefix="ray-peer-") as temp_dir:
        ray.init(address="local", include_dashboard=False, _temp_dir=temp_dir, logging_level="warning")
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(Iris.bind(), name="iris", route_prefix=ROUTE)
        print(f"ray-serve ready: http://127.0.0.1:{port}", flush=True)
        stop.wait()
        serve.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    main()
