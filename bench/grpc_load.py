"""issue 26's gRPC measurement: V2 gRPC ``ModelInfer`` on inferd, MLServer 1.7 and KServe 0.21, driven
by h2load (nghttp2's C load generator, so the client is not the bottleneck a Python one would be).

The servers serve the same ``examples/iris/model.joblib`` (inferd: ``inferd serve
examples/iris``, one worker, twice: its gRPC on grpcio (row ``inferd``) and on its own server,
``--grpc-server inferd`` (row ``native``), each row with its ratios and targets; the peers as
bench/all.py starts them; and the floor, bench/grpc_floor.py: grpc.aio by hand doing the same model
work, which bounds what any grpc.aio server reaches here) and run side by side; each round loads each
of them in turn at each concurrency (a warm-up run, then a measured one), so a drift of the machine
touches all alike. The body is one length-prefixed ``ModelInferRequest``: the iris row
as FP32 in ``raw_input_contents``, which is what tritonclient sends by default
(``InferInput.set_data_from_numpy``). Concurrency C is h2load's clients x streams: 1 = 1x1,
16 = 4x4, 64 = 4x16.

h2load counts HTTP 200s, and a failed gRPC call is an HTTP 200 too (its ``grpc-status`` travels in
the trailers), so every answer is checked in two ways: before each measured run, grpcio sends the
request and the answer must hold the model's own label (and probabilities, where the server returns
them); after it, the DATA bytes h2load received must be exactly one such answer per completed
request (a failed call is trailers-only: no DATA), else the missing ones count as errors.

In the same run, wrk measures inferd's own V2 REST JSON at concurrency 16 (bench/v2_iris.lua).
The table (req/s, p50, p99, the server's CPU time per answer and the cores other processes used
meanwhile: medians of the rounds; CPU per answer is the figure a busy machine moves least) and the
targets go to stdout and bench/results/grpc-<date>.txt.

    .venv/bin/python bench/grpc_load.py [--duration 10] [--warmup 2] [--rounds 3]
                                        [--concurrency 1 16 64] [--only inferd,mlserver,kserve]

Needs h2load (Debian: ``apt-get install -y nghttp2-client``) and wrk.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import grpc
import numpy as np
from all import kserve_launch
from peers import interrupt
from v2_iris import (
    EXAMPLE,
    FEATURES,
    HOST,
    ROOT,
    BenchError,
    CpuMeter,
    Expected,
    Launch,
    Running,
    ServerSpec,
    _mlserver,
    close_to,
    ensure_model,
    expected_answer,
    free_port,
    machine_lines,
    run_wrk,
    serving,
    venv_tool,
    write_dated,
)

from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb

METHOD = "/inference.GRPCInferenceService/ModelInfer"
#: Concurrency -> (h2load clients, streams per client).
SHAPES = {1: (1, 1), 16: (4, 4), 64: (4, 16)}
TARGET_CONCURRENCY = 16
#: inferd's rows: its gRPC on grpcio and on its own server; ratios and targets are given for each.
OURS = ("inferd", "native")
#: The row of inferd's default gRPC server (``--grpc-server``): the one the targets judge.
DEFAULT = "native"
TARGETS = {"mlserver": 2.0, "kserve": 1.5}  # inferd's gRPC req/s over the peer's, at c16
H2LOAD_SUMMARY = re.compile(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded")
H2LOAD_DATA = re.compile(r"traffic: .*?, \S+ \((\d+)\) data")


# ------------------------------------------------------------------------------------------ servers


@dataclass(frozen=True)
class GrpcLaunch:
    """A server's launch and the gRPC port it listens on."""

    launch: Launch
    grpc_port: int


def inferd_grpc(workdir: Path, server: str = "grpcio") -> GrpcLaunch:
    """``inferd serve examples/iris``, one worker, the code of this checkout (PYTHONPATH first), its
    gRPC on ``server`` (``--grpc-server``)."""
    port, grpc_port = free_port(), free_port()
    command = [venv_tool("inferd"), "serve", str(EXAMPLE), "--port", str(port), "--grpc-port", str(grpc_port)]
    command += ["--grpc-server", server, "--log-level", "warning"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return GrpcLaunch(Launch(command, ROOT, port, env), grpc_port)


def native_grpc(workdir: Path) -> GrpcLaunch:
    """The same with inferd's own gRPC server (`inferd.server.grpc_native`)."""
    return inferd_grpc(workdir, "inferd")


def floor_grpc(workdir: Path) -> GrpcLaunch:
    """bench/grpc_floor.py: grpc.aio by hand, the same model work."""
    port, grpc_port = free_port(), free_port()
    command = [sys.executable, str(ROOT / "bench" / "grpc_floor.py"), str(port), str(grpc_port)]
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'bench'}{os.pathsep}{ROOT}"}
    return GrpcLaunch(Launch(command, ROOT, port, env, ready_path="/"), grpc_port)


def mlserver_grpc(workdir: Path) -> GrpcLaunch:
    """MLServer in-process, as bench/v2_iris.py starts it (its gRPC port is in its settings.json)."""
    launch = _mlserver(workdir, 0)
    return GrpcLaunch(launch, json.loads((workdir / "settings.json").read_text())["grpc_port"])


def kserve_grpc(workdir: Path) -> GrpcLaunch:
    """bench/kserve_app.py as bench/all.py starts it; its gRPC port is on its command line."""
    launch = kserve_launch(workdir)
    return GrpcLaunch(launch, int(launch.command[launch.command.index("--grpc_port") + 1]))


@dataclass(frozen=True)
class Peer:
    key: str
    label: str
    prepare: Callable[[Path], GrpcLaunch]
    returns_probabilities: bool


PEERS = (
    Peer("inferd", "inferd 1 worker, grpcio", inferd_grpc, True),
    Peer("native", "inferd 1 worker, --grpc-server inferd", native_grpc, True),
    Peer("floor", "grpc.aio floor", floor_grpc, True),
    Peer("mlserver", "MLServer 1.7", mlserver_grpc, False),  # its sklearn runtime: predict only
    Peer("kserve", "KServe 0.21", kserve_grpc, True),
)


@dataclass
class Served:
    peer: Peer
    running: Running
    grpc_port: int
    answer_bytes: int = 0  # one answer's DATA on the wire: 5-byte prefix + message
    runs: dict[int, list[Result]] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------ checking


def request_message() -> pb.ModelInferRequest:
    """The iris row as tritonclient sends it: FP32 bytes in ``raw_input_contents``."""
    message = pb.ModelInferRequest(model_name="iris")
    message.inputs.add(name="input-0", datatype="FP32", shape=[1, 4])
    message.raw_input_contents.append(np.asarray(FEATURES, dtype=np.float32).tobytes())
    return message


def framed(message: pb.ModelInferRequest) -> bytes:
    """``message`` as one gRPC frame: not compressed, big-endian length, the bytes."""
    body = message.SerializeToString()
    return struct.pack(">BI", 0, len(body)) + body


def outputs_of(answer: pb.ModelInferResponse) -> dict[str, np.ndarray]:
    """Each output as a flat array, from raw or typed contents (servers differ)."""
    found = {}
    for index, tensor in enumerate(answer.outputs):
        dtype = {"FP32": np.float32, "FP64": np.float64, "INT64": np.int64, "INT32": np.int32}[
            tensor.datatype
        ]
        if answer.raw_output_contents:
            found[tensor.name] = np.frombuffer(answer.raw_output_contents[index], dtype=dtype)
        else:
            field_ = tensor.contents.ListFields()[0][1] if tensor.contents.ListFields() else []
            found[tensor.name] = np.asarray(list(field_), dtype=dtype)
    return found


def check(served: Served, expected: Expected) -> None:
    """One grpcio call; BenchError unless it is OK with the model's answer. Sets ``answer_bytes``."""
    with grpc.insecure_channel(f"{HOST}:{served.grpc_port}") as channel:
        call = channel.unary_unary(
            METHOD,
            request_serializer=pb.ModelInferRequest.SerializeToString,
            response_deserializer=pb.ModelInferResponse.FromString,
        )
        try:
            answer = call(request_message(), timeout=30)
        except grpc.RpcError as exc:
            raise BenchError(f"{served.peer.key}: ModelInfer failed: {exc.code()} {exc.details()}") from None
    arrays = list(outputs_of(answer).values())
    labels = [array for array in arrays if array.dtype.kind == "i"]
    probabilities = [array for array in arrays if array.dtype.kind == "f"]
    if not labels or labels[0].tolist() != expected.labels:
        raise BenchError(f"{served.peer.key}: wrong label in {answer}")
    if served.peer.returns_probabilities and not (
        probabilities and close_to(probabilities[0].tolist(), expected.probabilities)
    ):
        raise BenchError(f"{served.peer.key}: wrong probabilities in {answer}")
    served.answer_bytes = 5 + answer.ByteSize()


# ---------------------------------------------------------------------------------------------- h2load


@dataclass(frozen=True)
class Result:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    cpu_us: float  # CPU time of the server's process tree per answered request
    other_cores: float  # cores used meanwhile by processes other than the server, h2load and us


def h2load(served: Served, body: Path, concurrency: int, seconds: int, log: Path | None) -> Result:
    """One h2load run of ``seconds``; latencies from its per-request log when ``log`` is given."""
    clients, streams = SHAPES.get(concurrency, (min(concurrency, 4), max(concurrency // 4, 1)))
    command = [
        "h2load", "-t1", f"-c{clients}", f"-m{streams}", f"-D{seconds}", "-d", str(body),
        "-H", "content-type: application/grpc", "-H", "te: trailers",
        f"http://{HOST}:{served.grpc_port}{METHOD}",
    ]  # fmt: skip
    if log is not None:
        log.unlink(missing_ok=True)  # h2load appends to it
        command.append(f"--log-file={log}")
    meter = CpuMeter(served.running.process.pid)
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=seconds + 60)
    server_cores, other_cores = meter.read()
    summary, data = H2LOAD_SUMMARY.search(done.stdout), H2LOAD_DATA.search(done.stdout)
    if done.returncode != 0 or summary is None or data is None:
        raise BenchError(
            f"h2load failed (exit {done.returncode}):\n{done.stdout[-1500:]}{done.stderr[-500:]}"
        )
    finished, succeeded = map(int, summary.groups())
    answered = int(data.group(1)) // served.answer_bytes  # answers with a message: gRPC OK
    latencies = _latencies_ms(log) if log is not None else [0.0]
    return Result(
        rps=succeeded / seconds,
        p50_ms=_percentile(latencies, 50),
        p99_ms=_percentile(latencies, 99),
        errors=(finished - succeeded) + max(succeeded - answered, 0),
        cpu_us=server_cores * seconds / succeeded * 1e6 if succeeded else float("inf"),
        other_cores=other_cores,
    )


def _latencies_ms(log: Path) -> list[float]:
    """The third column of h2load's --log-file: microseconds until the end of each response."""
    return [int(line.split("\t")[2]) / 1000 for line in log.read_text().splitlines() if line]


def _percentile(values: list[float], percent: int) -> float:
    return float(np.percentile(values, percent)) if values else float("nan")


# ---------------------------------------------------------------------------------------------- run


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per measured run [10]")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of warm-up before each run [2]")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over every server [3]")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--only", default=",".join(peer.key for peer in PEERS), help="servers, by key")
    return parser.parse_args()


def start_all(peers: list[Peer], stack: ExitStack, tmp: Path) -> Iterator[Served]:
    for peer in peers:
        workdir = tmp / peer.key
        workdir.mkdir()
        prepared = peer.prepare(workdir)
        spec = ServerSpec(peer.key, peer.label, peer.key, lambda _, launch=prepared.launch: launch)
        running = stack.enter_context(serving(spec, workdir))
        yield Served(peer, running, prepared.grpc_port)


def measure(args: argparse.Namespace, servers: list[Served], tmp: Path) -> list[float]:
    """Every round, concurrency and server; inferd's REST JSON req/s at c16 of each round."""
    body, log = tmp / "request.bin", tmp / "h2load.log"
    body.write_bytes(framed(request_message()))
    expected, rest = expected_answer(), []
    inferd = next((served for served in servers if served.peer.key in OURS), None)
    for round_ in range(1, args.rounds + 1):
        for concurrency in args.concurrency:
            for served in servers:
                check(served, expected)
                h2load(served, body, concurrency, args.warmup, None)
                result = h2load(served, body, concurrency, args.duration, log)
                served.runs.setdefault(concurrency, []).append(result)
                print(
                    f"round {round_} c{concurrency:<3} {served.peer.key:<9} {result.rps:8,.0f} req/s  "
                    f"p50 {result.p50_ms:6.2f} ms  p99 {result.p99_ms:6.2f} ms  errors {result.errors}  "
                    f"CPU {result.cpu_us:5.0f} us/req  others {result.other_cores:.2f} cores",
                    flush=True,
                )
            if concurrency == TARGET_CONCURRENCY and inferd is not None:
                run_wrk(inferd.running, concurrency, args.warmup)
                json_run = run_wrk(inferd.running, concurrency, args.duration, round_)
                if json_run.errors:
                    raise BenchError(f"inferd REST JSON: {json_run.errors} errors")
                rest.append(json_run.rps)
                print(
                    f"round {round_} c{concurrency:<3} inferd REST JSON {json_run.rps:8,.0f} req/s",
                    flush=True,
                )
    return rest


def median(served: Served, concurrency: int) -> Result:
    runs = served.runs[concurrency]
    return Result(
        rps=statistics.median(run.rps for run in runs),
        p50_ms=statistics.median(run.p50_ms for run in runs),
        p99_ms=statistics.median(run.p99_ms for run in runs),
        errors=sum(run.errors for run in runs),
        cpu_us=statistics.median(run.cpu_us for run in runs),
        other_cores=statistics.median(run.other_cores for run in runs),
    )


def report(args: argparse.Namespace, servers: list[Served], rest: list[float], load: Any) -> str:
    lines = [
        f"# bench/grpc_load.py --duration {args.duration} --rounds {args.rounds} --concurrency "
        f"{' '.join(map(str, args.concurrency))}, {datetime.now(timezone.utc):%Y-%m-%dT%H:%MZ}",
        *machine_lines(load),
        "# V2 gRPC ModelInfer, iris row as FP32 raw_input_contents; h2load clients x streams: "
        + ", ".join(f"c{c} = {SHAPES[c][0]}x{SHAPES[c][1]}" for c in args.concurrency if c in SHAPES),
        f"# medians of {args.rounds} rounds; errors: failed streams plus answers without a message; CPU: "
        "the server's process tree per answer; others: cores other processes used meanwhile",
        f"{'concurrency':>11}  {'server':<10}  {'req/s':>8}  {'p50 ms':>7}  {'p99 ms':>7}  {'errors':>6}"
        f"  {'CPU us/req':>10}  {'others':>6}  inferd rows / this",
    ]
    by_key = {served.peer.key: served for served in servers}
    ours_keys = [key for key in OURS if key in by_key]
    for concurrency in args.concurrency:
        for served in servers:
            one = median(served, concurrency)
            ratios = [
                f"{key} {median(by_key[key], concurrency).rps / one.rps:.2f}x"
                for key in ours_keys
                if key != served.peer.key and one.rps
            ]
            lines.append(
                f"{concurrency:>11}  {served.peer.key:<10}  {one.rps:>8,.0f}  {one.p50_ms:>7.2f}  "
                f"{one.p99_ms:>7.2f}  {one.errors:>6}  {one.cpu_us:>10,.0f}  {one.other_cores:>6.2f}  "
                f"{', '.join(ratios)}"
            )
            for key in ours_keys:
                if key != served.peer.key:
                    each = [
                        a.rps / b.rps
                        for a, b in zip(by_key[key].runs[concurrency], served.runs[concurrency], strict=False)
                    ]
                    lines.append(f"{'':>13}{key} / this round by round: {' '.join(f'{r:.2f}' for r in each)}")
    if TARGET_CONCURRENCY in args.concurrency:
        for key in ours_keys:
            lines += target_lines(key, by_key, rest)
    return "\n".join(lines) + "\n"


def target_lines(key: str, by_key: dict[str, Served], rest: list[float]) -> list[str]:
    """issue 26's targets at c16 for inferd's row ``key``: judged (PASS/FAIL, which bench/sections.py
    gathers) for the default server's row, stated for comparison for the other's."""
    lines = []
    ours = median(by_key[key], TARGET_CONCURRENCY)
    clean = ours.errors == 0

    def judged(met: bool) -> str:
        if key != DEFAULT:
            return "(not the default server: for comparison)"
        return "PASS" if met else "FAIL"

    for peer, factor in TARGETS.items():
        if peer in by_key:
            theirs = median(by_key[peer], TARGET_CONCURRENCY)
            ratio = ours.rps / theirs.rps
            verdict = judged(ratio >= factor and clean and not theirs.errors)
            lines.append(f"target: c16 {key} gRPC >= {factor}x {peer} gRPC: {ratio:.2f}x {verdict}")
    if rest:
        rest_rps = statistics.median(rest)
        each = " ".join(
            f"{a.rps / b:.2f}" for a, b in zip(by_key[key].runs[TARGET_CONCURRENCY], rest, strict=False)
        )
        verdict = judged(ours.rps >= rest_rps and clean)
        lines.append(
            f"target: c16 {key} gRPC ({ours.rps:,.0f} req/s) >= inferd REST JSON (wrk, {rest_rps:,.0f}): "
            f"{ours.rps / rest_rps:.2f}x {verdict} (round by round: {each})"
        )
    return lines


def main() -> int:
    args = arguments()
    for tool, package in (("h2load", "nghttp2-client"), ("wrk", "wrk")):
        if shutil.which(tool) is None:
            print(f"{tool} is missing: apt-get install -y {package}", file=sys.stderr)
            return 2
    wanted = set(args.only.split(","))
    peers = [peer for peer in PEERS if peer.key in wanted]
    signal.signal(signal.SIGTERM, interrupt)  # stop the servers as on Ctrl+C
    ensure_model()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="grpc-load-") as tmp, ExitStack() as stack:
        try:
            servers = list(start_all(peers, stack, Path(tmp)))
            rest = measure(args, servers, Path(tmp))
        except BenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    return write_dated("grpc", report(args, servers, rest, load))


if __name__ == "__main__":
    sys.exit(main())
