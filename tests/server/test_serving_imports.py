"""What a serving process imports (issue 26): ``inferd serve --no-grpc`` loads no grpc or protobuf, no
code of a dialect other than the one it serves, no other command's code, no CLI presentation
library (rich) and no typer (its command line is read by `inferd.cli.argv`); with gRPC on, inferd's
own gRPC server loads protobuf for the V2 messages but no grpcio.

Each test runs the real ``inferd serve`` (``python -m inferd``, through runpy) in a subprocess that
writes its ``sys.modules`` to a file when it exits; it is asked one inference first, so what the
request path imports on first use counts too, then stopped with SIGTERM as an orchestrator would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx

from tests.servers import READY, ROOT, START_TIMEOUT, with_this_tree

#: ``python -m inferd ARGS``, writing the process's module names to $MODULES_FILE at exit, and
#: whether its garbage collector was on and how many objects it had frozen to $GC_FILE.
LAUNCH = """
import atexit, gc, os, runpy, sys

def dump():
    with open(os.environ["MODULES_FILE"], "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
    with open(os.environ["GC_FILE"], "w") as out:
        out.write(f"{gc.isenabled()} {gc.get_freeze_count()}")

atexit.register(dump)
runpy.run_module("inferd", run_name="__main__", alter_sys=True)
"""

NUMPY_ONLY = """
import numpy as np

import inferd
from inferd import TensorSpec


class Doubler(inferd.Model):
    inputs = (TensorSpec("x", "FP32", (-1,)),)

    def predict(self, inputs):
        return {"y": inputs["x"] * 2}
"""
#: Modules of the other commands: the serving process parses serve's command line alone.
OTHER_COMMANDS = {"inferd.cli.commands", "inferd.cli.client", "inferd.cli.platform", "inferd.cli.project"}
IRIS_ROW = {
    "inputs": [{"name": "input-0", "shape": [1, 4], "datatype": "FP32", "data": [5.1, 3.5, 1.4, 0.2]}]
}
NUMBERS = {"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [1, 2]}]}


def modules_of_serving(
    target: str,
    model: str,
    request: dict[str, object],
    tmp_path: Path,
    options: tuple[str, ...] = ("--no-grpc",),
) -> set[str]:
    """The modules ``inferd serve TARGET OPTIONS`` had loaded when it stopped, after one inference."""
    dump = tmp_path / "modules.txt"
    command = [sys.executable, "-c", LAUNCH, "serve", target, "--port", "0", *options]
    env = with_this_tree({**os.environ, "MODULES_FILE": str(dump), "GC_FILE": str(tmp_path / "gc.txt")})
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert process.stdout is not None
    timer = threading.Timer(START_TIMEOUT, process.kill)
    timer.start()
    try:
        ready = next((match for line in process.stdout if (match := READY.search(line))), None)
        assert ready is not None, f"inferd exited with {process.wait()} before it was ready"
        url = f"http://{ready['host']}:{ready['port']}/v2/models/{model}/infer"
        assert httpx.post(url, json=request, timeout=30).status_code == 200
    finally:
        timer.cancel()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        process.stdout.close()
    return set(dump.read_text().split())


def grpc_and_protobuf(modules: set[str]) -> set[str]:
    return grpcio(modules) | {name for name in modules if name.startswith("google.protobuf")}


def grpcio(modules: set[str]) -> set[str]:
    return {name for name in modules if name.split(".")[0] in ("grpc", "grpc_reflection", "grpc_status")}


def other_dialects(modules: set[str], served: str) -> set[str]:
    """Modules of dialects other than ``served``, but for each one's package and settings declaration:
    `inferd.config.settings` gathers every dialect's settings into the one Settings object."""
    found = set()
    for name in modules:
        parts = name.split(".")
        if name.startswith("inferd.dialects.") and parts[2] not in (served, "base"):
            if len(parts) > 3 and parts[3] != "settings":
                found.add(name)
    return found


def storage_beyond_locations(modules: set[str]) -> set[str]:
    """inferd's object-storage modules but its package and the check of a target for a URI."""
    return {
        name for name in modules if name.startswith("inferd.storage.") and name != "inferd.storage.locations"
    }


def test_an_iris_server_without_grpc_loads_neither_grpc_nor_protobuf_nor_other_dialects(
    tmp_path: Path,
) -> None:
    modules = modules_of_serving(str(ROOT / "examples" / "iris"), "iris", IRIS_ROW, tmp_path)
    assert "inferd.dialects.native.loader" in modules  # the dump is of the serving process
    assert grpc_and_protobuf(modules) == set()
    assert other_dialects(modules, "native") == set()
    assert "typer.rich_utils" not in modules  # scikit-learn itself imports rich (sklearn.callback)
    assert storage_beyond_locations(modules) == set()  # a local project fetches nothing
    assert OTHER_COMMANDS & modules == set()  # serve's command is built alone
    assert {name for name in modules if name.split(".")[0] == "typer"} == set()  # nor even that
    # Requests are counted in inferd's own families; prometheus_client (and its exposition's HTTP
    # server and urllib.request) loads when /metrics is first read, which nobody did here
    assert {name for name in modules if name.split(".")[0] == "prometheus_client"} == set()
    assert "inferd.protocols.poster" not in modules  # the payload log's sender: no payload log here


def test_a_server_of_a_model_that_imports_no_rich_loads_no_rich(tmp_path: Path) -> None:
    project = tmp_path / "doubler"
    project.mkdir()
    (project / "model.py").write_text(NUMPY_ONLY)
    modules = modules_of_serving(str(project), "doubler", NUMBERS, tmp_path)
    assert "inferd.server.app" in modules
    assert {name for name in modules if name.split(".")[0] == "rich"} == set()
    assert grpc_and_protobuf(modules) == set()
    assert other_dialects(modules, "native") == set()


def test_an_iris_server_on_the_native_grpc_server_loads_no_grpcio(tmp_path: Path) -> None:
    options = ("--grpc-port", "0", "--grpc-server", "inferd")
    modules = modules_of_serving(str(ROOT / "examples" / "iris"), "iris", IRIS_ROW, tmp_path, options)
    assert "inferd.server.grpc_native" in modules  # gRPC is served, on inferd's own server
    assert "inferd.protocols.v2._generated.grpc_predict_v2_pb2" in modules
    assert grpcio(modules) == set()
    assert "inferd.protocols.v2._generated.grpc_predict_v2_pb2_grpc" not in modules  # it imports grpc


def test_a_server_collects_garbage_again_once_it_serves_with_its_start_up_frozen(tmp_path: Path) -> None:
    """`inferd serve` pauses the collector while it starts (inferd.engines.heap): it must be on again
    while the server serves, with what start-up built frozen out of its collections."""
    project = tmp_path / "doubler"
    project.mkdir()
    (project / "model.py").write_text(NUMPY_ONLY)
    modules_of_serving(str(project), "doubler", NUMBERS, tmp_path)
    enabled, frozen = (tmp_path / "gc.txt").read_text().split()
    assert enabled == "True"
    assert int(frozen) > 10_000  # the modules, classes and app of a server are tens of thousands
