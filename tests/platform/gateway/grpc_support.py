"""What the gRPC tests of both data paths share: two real ``inferd serve`` processes of a native model
``scale`` (one answers x, the other 2x), tritonclient.grpc calls naming an endpoint, and a thread of
calls that keeps every failure."""

from __future__ import annotations

import textwrap
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as triton
from tritonclient.utils import InferenceServerException

from tests.servers import RunningServer, serve

MODEL = """
import inferd


class Scale(inferd.Model):
    inputs = (inferd.TensorSpec("x", "FP32", (-1,)),)
    outputs = (inferd.TensorSpec("y", "FP32", (-1,)),)

    def predict(self, inputs):
        return {{"y": inputs["x"] * {factor}}}
"""


def scale_folder(root: Path, factor: float) -> Path:
    folder = root / f"x{factor:g}" / "scale"
    folder.mkdir(parents=True)
    (folder / "model.py").write_text(textwrap.dedent(MODEL.format(factor=factor)))
    return folder


@pytest.fixture(scope="module")
def scales(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, RunningServer]]:
    """``inferd serve`` of model ``scale`` with factor 1 and with factor 2, gRPC on."""
    root = tmp_path_factory.mktemp("scales")
    with ExitStack() as servers:
        one, two = (servers.enter_context(serve(str(scale_folder(root, f)))) for f in (1, 2))
        assert one.grpc_address and two.grpc_address
        yield one, two


def infer(address: str, endpoint: str | None = "main", value: float = 1.0, **headers: str) -> float:
    """``scale(value)`` through the gRPC gateway at ``address`` (``inferd-endpoint: endpoint``)."""
    with triton.InferenceServerClient(address) as client:
        return call(client, endpoint, value, **headers)


def call(
    client: triton.InferenceServerClient, endpoint: str | None, value: float = 1.0, **headers: str
) -> float:
    tensor = triton.InferInput("x", [1], "FP32")
    tensor.set_data_from_numpy(np.array([value], np.float32))
    if endpoint is not None:
        headers["inferd-endpoint"] = endpoint
    answer = client.infer("scale", [tensor], headers=headers, client_timeout=30)
    return float(answer.as_numpy("y")[0])


def refusal(address: str, endpoint: str | None = "main", **headers: str) -> tuple[str, str]:
    """The status name and message a call that must fail gets."""
    with pytest.raises(InferenceServerException) as failed:
        infer(address, endpoint, **headers)
    return str(failed.value.status()), str(failed.value.message())


class GrpcLoad:
    """Calls through the gateway from a thread, one client, keeping answers and failures."""

    def __init__(self, address: str, **headers: str) -> None:
        self.address, self.headers = address, headers
        self.answers: list[float] = []
        self.failures: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        with triton.InferenceServerClient(self.address) as client:
            while not self.stop.is_set():
                try:
                    self.answers.append(call(client, "main", **self.headers))
                except InferenceServerException as error:
                    self.failures.append(str(error))

    def __enter__(self) -> GrpcLoad:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)
