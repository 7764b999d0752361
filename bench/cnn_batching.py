"""CNN batching benchmark: inferd's adaptive batching on and off, serving a small ONNX CNN.

The model (bench/cnn_model.py, built into a temporary folder at start): one 3x64x64 FP32 image in,
three stride-2 3x3 convolutions (16, 32, 64 channels), then a VGG-style head, Flatten →
Gemm(4096→2048) → Relu → Gemm(2048→10), 10 logits out; random weights of a fixed seed. It runs in
onnxruntime on the CPU with one intra-op thread, so that on this 2-core machine (one core for wrk)
batching, not onnxruntime's threads, is what is measured; ``predict`` runs on the event loop (the
native default, no ``predict_in_thread``). On one thread the convolutions cost about the same per
image at any batch size (~35 µs); the head's first Gemm reads its 32 MiB of weights once per call,
~0.75 ms for 1 image and ~4 ms for 32, which is what batching amortises. ``--hidden 0`` serves the
head GlobalAveragePool → Gemm(64→10) instead: ~35 µs per image, less than the HTTP work of a
request, so batching has nothing to win there (0.75-0.9x at concurrency 32).

Two servers, ``inferd serve bench/cnn_model.py:Cnn --name cnn --no-grpc --port 0`` (bench/loadgen.py)
without batching, and the same with ``--max-batch-size 32 --max-batch-time-ms 2``. 2 ms was chosen
from 1, 2, 3 and 5 ms at concurrency 32: all gave 2.9-3.4k req/s, within the run-to-run noise, and
2 ms was marginally the best; at concurrency 1 a lone request waits the whole batching time, so a
shorter one costs less there (``--batch-time-ms`` to try others).

The request, ``POST /v2/models/cnn/infer``, uses the V2 binary tensor data extension: header
``Inference-Header-Content-Length``, ``Content-Type: application/octet-stream``, a body of a JSON
header (``binary_data_size`` 49152, logits asked as JSON) and the image's 49,152 little-endian bytes.
Both servers must first answer it with status 200 and 10 logits within 1e-4 of onnxruntime run in
this process on the same file, and the batching server must answer 32 different images sent at once
with each its own logits. Then, for each concurrency, for each round, wrk (bench/v2_iris.lua,
which reads the body from a file) runs a warm-up and a measured run on one server, then on the other.
The table gives the medians over the rounds of req/s, p50 and p99 latency, the peak RSS of each
server's process tree, and batching on's req/s and p99 as ratios of batching off's; it is also
written, with the machine, to bench/results/cnn-<date>.txt. Target: at concurrency 32, batching on
gives >= 2x the req/s of batching off with a p99 <= 2x batching off's, no errors. Exit 0 on PASS,
1 on FAIL, 2 when the benchmark could not run, 130 when interrupted. Only 127.0.0.1 is used.

    .venv/bin/python bench/cnn_batching.py [--duration 10] [--warmup 2] [--rounds 3]
                                           [--concurrency 1 32] [--batch-time-ms 2] [--hidden 2048]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from urllib.parse import urlsplit

import cnn_model
import httpx
import numpy as np
from loadgen import ROOT, start_inferd
from peers import Server, cell, header_line, interrupt, load, report, row_line, stop_strays
from v2_iris import BenchError, stop

TARGET_PATH = f"{ROOT / 'bench' / 'cnn_model.py'}:Cnn"
MODEL = "cnn"
PATH = f"/v2/models/{MODEL}/infer"
MAX_BATCH_SIZE = 32
TARGET_CONCURRENCY, TARGET_RPS_RATIO, TARGET_P99_RATIO = 32, 2.0, 2.0
TOLERANCE = 1e-4
OFF, ON = "batching off", "batching on"


# ------------------------------------------------------------------------------------------ request


def body(images: np.ndarray) -> tuple[bytes, int]:
    """A V2 binary-extension request body for ``images`` and the length of its JSON header."""
    data = np.ascontiguousarray(images, dtype="<f4").tobytes()
    tensor = {"name": cnn_model.INPUT, "shape": list(images.shape), "datatype": "FP32"}
    header = {
        "inputs": [{**tensor, "parameters": {"binary_data_size": len(data)}}],
        "outputs": [{"name": cnn_model.OUTPUT, "parameters": {"binary_data": False}}],
    }
    raw = json.dumps(header, separators=(",", ":")).encode()
    return raw + data, len(raw)


def infer(client: httpx.Client, server: Server, image: np.ndarray) -> np.ndarray:
    """The logits ``server`` answers for one image (1x3x64x64)."""
    content, header_length = body(image)
    headers = {
        "Inference-Header-Content-Length": str(header_length),
        "Content-Type": "application/octet-stream",
    }
    answer = client.post(server.url, content=content, headers=headers)
    if answer.status_code != 200:
        raise BenchError(f"{server.name}: POST {PATH} answered {answer.status_code}: {answer.text[:300]}")
    try:
        (output,) = answer.json()["outputs"]
        logits: np.ndarray = np.asarray(output["data"], dtype=np.float32).reshape(output["shape"])
    except (ValueError, KeyError, TypeError) as exc:
        raise BenchError(f"{server.name}: unexpected answer ({exc}): {answer.text[:300]}") from None
    if logits.shape != (1, cnn_model.CLASSES):
        raise BenchError(f"{server.name}: expected 1x{cnn_model.CLASSES} logits, got {list(logits.shape)}")
    return logits


def check(server: Server, images: np.ndarray, expected: np.ndarray, at_once: bool) -> None:
    """``server`` answers the first image with its expected logits (and, ``at_once``, every image
    when all are sent concurrently, so that they are batched)."""
    with httpx.Client(timeout=30, trust_env=False) as client:
        got = [infer(client, server, images[:1])]
    if at_once:
        with ThreadPoolExecutor(len(images)) as pool:
            clients = [httpx.Client(timeout=30, trust_env=False) for _ in images]
            try:
                got = list(
                    pool.map(lambda i: infer(clients[i], server, images[i : i + 1]), range(len(images)))
                )
            finally:
                for client in clients:
                    client.close()
    difference = max(float(np.abs(one - want).max()) for one, want in zip(got, expected, strict=False))
    if difference > TOLERANCE:
        raise BenchError(f"{server.name}: logits differ from onnxruntime's by {difference:.2e}")
    print(f"{server.name}: 200, {len(got)} image(s), logits within {difference:.1e} of onnxruntime's")


# ---------------------------------------------------------------------------------------- reporting


def table(off: Server, on: Server) -> tuple[list[str], bool]:
    """The table's lines and whether the target is met."""
    lines = [header_line(("on/off req/s", 12), ("on/off p99", 10))]
    passed = None
    for concurrency in sorted(set(off.runs) & set(on.runs)):
        without, with_ = cell(off, concurrency), cell(on, concurrency)
        rps_ratio = with_.rps / without.rps if without.rps else float("inf")
        p99_ratio = with_.p99_ms / without.p99_ms if without.p99_ms else float("inf")
        ratios = ((f"{rps_ratio:.2f}x", 12), (f"{p99_ratio:.2f}x", 10))
        lines.append(row_line(concurrency, off.name, without, ("", 12), ("", 10)))
        lines.append(row_line(concurrency, on.name, with_, *ratios))
        if concurrency == TARGET_CONCURRENCY:
            passed = (
                rps_ratio >= TARGET_RPS_RATIO
                and p99_ratio <= TARGET_P99_RATIO
                and not without.errors + with_.errors
            )
    verdict = {True: "PASS", False: "FAIL", None: "FAIL (not measured)"}[passed]
    lines.append(
        f"target: at concurrency {TARGET_CONCURRENCY}, batching on >= {TARGET_RPS_RATIO:.0f}x batching off's "
        f"req/s with a p99 <= {TARGET_P99_RATIO:.0f}x batching off's, no errors: {verdict}"
    )
    return lines, passed is True


# --------------------------------------------------------------------------------------------- main


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per measured run [10]")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of warm-up before each run [2]")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the two servers [3]")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, TARGET_CONCURRENCY])
    parser.add_argument("--batch-time-ms", type=float, default=2.0, help="--max-batch-time-ms [2]")
    parser.add_argument(
        "--hidden", type=int, default=cnn_model.HIDDEN, help="the head's hidden units, 0: none [2048]"
    )
    return parser.parse_args()


def bench(args: argparse.Namespace, folder: Path, servers: dict[str, Server]) -> tuple[Path, int]:
    """Build the model, start and check both servers; the wrk body's file and its JSON header length."""
    onnx_path = cnn_model.build(folder / "cnn.onnx", args.hidden)
    images = np.random.default_rng(1).standard_normal((MAX_BATCH_SIZE, *cnn_model.SHAPE)).astype(np.float32)
    expected = [
        cnn_model.session(onnx_path).run(None, {cnn_model.INPUT: images[i : i + 1]})[0]
        for i in range(len(images))
    ]
    env = {**os.environ, cnn_model.ENV: str(onnx_path)}
    batching = ("--max-batch-size", str(MAX_BATCH_SIZE), "--max-batch-time-ms", f"{args.batch_time_ms:g}")
    for name, options in ((OFF, ()), (ON, batching)):
        process, base = start_inferd(TARGET_PATH, "--name", MODEL, *options, cwd=folder, env=env)
        servers[name] = Server(name, process, urlsplit(base).port or 0, PATH)
    for name, server in servers.items():
        check(server, images, np.stack(expected), at_once=name == ON)
    content, header_length = body(images[:1])
    body_file = folder / "body.bin"
    body_file.write_bytes(content)
    return body_file, header_length


def main() -> int:
    """Exit 0 on PASS, 1 on FAIL, 2 when the benchmark could not run, 130 when interrupted."""
    args = arguments()
    if shutil.which("wrk") is None:
        print("wrk is missing: sudo apt-get update && sudo apt-get install -y wrk", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    signal.signal(signal.SIGTERM, interrupt)  # stop the servers on SIGTERM as on Ctrl+C
    servers: dict[str, Server] = {}
    status = 0
    with tempfile.TemporaryDirectory(prefix="cnn-bench-") as tmp:
        try:
            body_file, header_length = bench(args, Path(tmp), servers)
            wrk_env = {"V2_IRIS_BODY_FILE": str(body_file), "V2_IRIS_HEADER_LENGTH": str(header_length)}
            load(args, servers, wrk_env)
        except (BenchError, SystemExit) as exc:  # SystemExit: start_inferd's server died before ready
            print(f"error: {exc}", file=sys.stderr)
            status = 2
        except KeyboardInterrupt:
            print("\ninterrupted: stopping the servers; partial results follow", file=sys.stderr)
            status = 130
        finally:
            for server in servers.values():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(server.process.pid, signal.SIGTERM)
                print(f"{server.name}: {stop(server.process)}")
            stop_strays()
    if {OFF, ON} <= servers.keys() and all(server.runs for server in servers.values()):
        lines, passed = table(servers[OFF], servers[ON])
        head = (
            f"Flatten, Gemm(4096→{args.hidden}), Relu, Gemm({args.hidden}→10)"
            if args.hidden
            else "GlobalAveragePool, Flatten, Gemm(64→10)"
        )
        peer = (
            f"batching off vs on (--max-batch-size {MAX_BATCH_SIZE} --max-batch-time-ms "
            f"{args.batch_time_ms:g}); model: 3 convs (16, 32, 64 channels, stride 2), {head}, "
            f"onnxruntime {metadata.version('onnxruntime')} on 1 intra-op thread"
        )
        what = f"POST {PATH} one 1x3x64x64 FP32 image, V2 binary tensor extension, logits as JSON"
        report("cnn_batching.py", "cnn", peer, what, lines, args)
        status = status or (0 if passed else 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
