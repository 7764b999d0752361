"""Models from object storage (issue 23): how fast inferd's model cache fetches a large model from an
S3 API server, against boto3's own ``download_file`` (its transfer manager: ranged GETs on threads)
on the same object in the same run, and that the workers of a server share one download.

An S3 API server (moto's, in this process, on a free loopback port) holds one ONNX model of about
``--size-mib`` MiB (a float initializer summed into the output, so the model is that large to load).
Each round fetches it into a new cache folder with `ModelCache.fetch` and downloads it with boto3
into a new file, in alternation; the table shows MiB/s of each and their ratio. Target: inferd at
least 0.70x boto3. Then ``inferd serve --workers 2`` serves a Cortex project naming the model by
its ``s3://`` URI: the cache must hold one entry and the log say one download.

    .venv/bin/python bench/storage_download.py [--size-mib 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import boto3
import numpy as np
from loadgen import READY, ROOT
from moto.server import ThreadedMotoServer
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(ROOT))
from inferd.storage import ModelCache

TARGET = 0.70
BUCKET = "bench-models"
KEY = "exports/big.onnx"
DOWNLOADED = re.compile(r"downloaded s3://\S+ \(\d+ bytes")


def big_onnx(size_mib: int) -> bytes:
    """``y = x + sum(w)`` with ``w`` a float32 initializer of ``size_mib`` MiB."""
    weights = numpy_helper.from_array(np.ones(size_mib * 1024 * 1024 // 4, dtype=np.float32), "w")
    nodes = [
        helper.make_node("ReduceSum", ["w"], ["total"], keepdims=0),
        helper.make_node("Add", ["x", "total"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 1])],
        [weights],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def speeds(size: int, rounds: int, workdir: Path) -> tuple[list[float], list[float]]:
    """MiB/s of inferd's fetch and of boto3's download_file, one of each per round, alternating."""
    client, uri = boto3.client("s3"), f"s3://{BUCKET}/{KEY}"
    ours, theirs = [], []
    for round in range(rounds):
        cache = ModelCache(workdir / f"cache-{round}", 10 * size)
        ours.append(size / 2**20 / timed(partial(cache.fetch, uri)))
        cache.close()
        target = workdir / f"boto3-{round}.onnx"
        theirs.append(size / 2**20 / timed(partial(client.download_file, BUCKET, KEY, str(target))))
        target.unlink()
    return ours, theirs


def serve_two_workers(workdir: Path) -> tuple[int, int]:
    """``inferd serve --workers 2`` on a Cortex project naming the model in S3, until it answers:
    (downloads the log reports, cache entries)."""
    project = workdir / "project"
    project.mkdir()
    (project / "cortex.yaml").write_text(
        textwrap.dedent(f"""
        - kind: api
          name: big
          onnx:
            model: s3://{BUCKET}/{KEY}
        """)
    )
    data = workdir / "data"
    command = [sys.executable, "-m", "inferd", "serve", str(project), "--workers", "2", "--port", "0"]
    command += ["--no-grpc"]
    command += ["--data-dir", str(data), "--log-level", "info"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stderr is not None
    try:
        if not any(READY.search(line) for line in process.stdout):
            raise SystemExit(f"inferd exited with {process.wait()} before it was ready")
    finally:
        process.terminate()
    log = process.stderr.read()
    process.wait()
    return len(DOWNLOADED.findall(log)), len(list((data / "model-cache" / "entries").glob("*")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ.update(
        AWS_ENDPOINT_URL=f"http://{host}:{port}",
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
    )
    try:
        body = big_onnx(args.size_mib)
        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        client.put_object(Bucket=BUCKET, Key=KEY, Body=body)
        with tempfile.TemporaryDirectory() as folder:
            ours, theirs = speeds(len(body), args.rounds, Path(folder))
            downloads, entries = serve_two_workers(Path(folder))
    finally:
        server.stop()
    ratio = statistics.median(ours) / statistics.median(theirs)
    print(f"model: {len(body) / 2**20:.0f} MiB from moto's S3 server on loopback, {args.rounds} rounds")
    print(f"{'':24}{'median MiB/s':>14}{'min-max':>18}")
    for name, values in (("inferd ModelCache.fetch", ours), ("boto3 download_file", theirs)):
        print(f"{name:24}{statistics.median(values):>14,.0f}{f'{min(values):,.0f}-{max(values):,.0f}':>18}")
    print(f"inferd / boto3: {ratio:.2f}x")
    print(f"target: fetch >= {TARGET:.0%} of boto3's download_file: {'PASS' if ratio >= TARGET else 'FAIL'}")
    shared = downloads == 1 and entries == 1
    print(f"2 workers: {downloads} download(s), {entries} cache entr(ies): {'PASS' if shared else 'FAIL'}")
    return 0 if ratio >= TARGET and shared else 1


if __name__ == "__main__":
    raise SystemExit(main())
