"""The Ray Serve peer of bench/all.py: the iris model as a ``@serve.deployment`` whose plain
``__call__`` takes the Starlette request (Ray Serve's own HTTP proxy in front, one replica), answering
V2 JSON at any path and a GET (the readiness check) with 200.

    bench/.envs/ray/bin/python bench/ray_app.py PORT TEMP_DIR

Ray starts locally (GCS, raylet, its agents, the Serve controller, proxy and replica: all children of
this process) with its session files in TEMP_DIR; per-request access logs are off, as they are in
inferd.
"""

from __future__ import annotations

import sys

import peer_iris
import ray
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

QUIET = {"enable_access_log": False}


@serve.deployment(num_replicas=1)
class Iris:
    def __init__(self) -> None:
        self.classifier = peer_iris.load()

    async def __call__(self, request: Request) -> Response:
        if request.method == "GET":
            return Response(status_code=200)
        tensor = (await request.json())["inputs"][0]
        rows = peer_iris.features(tensor["shape"], tensor["data"])
        return JSONResponse(peer_iris.v2_response(peer_iris.predict(self.classifier, rows)))


def main(port: int, temp_dir: str) -> None:
    ray.init(include_dashboard=False, _temp_dir=temp_dir, object_store_memory=80 * 2**20)
    serve.start(http_options={"host": "127.0.0.1", "port": port}, logging_config=QUIET)
    serve.run(Iris.bind(), route_prefix="/", logging_config=QUIET, blocking=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
