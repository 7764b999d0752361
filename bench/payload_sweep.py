"""issue 26's big-tensor sweep: FP32 tensors of 4 KiB to 16 MiB through an identity model, over V2
REST JSON, V2 REST with the binary tensor extension and V2 gRPC, on inferd, MLServer 1.7 and KServe
0.21, with MB/s, p99 and the memory each request holds.

The servers (started side by side on free loopback ports, the peers from bench/.envs as
bench/all.py starts them):

- inferd, one worker: ``inferd serve bench/identity_model.py:Identity`` (the input array returned);
- MLServer 1.7 in-process: bench/mlserver_identity.py, a custom runtime that decodes the input with
  MLServer's ``NumpyCodec`` and encodes it back; MLServer has no REST binary extension, so its
  binary cells are ``unsupported`` and inferd's binary REST is compared with its best REST (JSON);
- KServe 0.21: bench/kserve_identity.py, a ``kserve.Model`` whose ``predict`` returns the input
  (binary when the request asks for binary outputs).

Every (server, protocol, size) is first checked: the answer must equal the input (JSON: the same
float32 values and shape; binary REST and gRPC: the same bytes, byte for byte). A cell that fails the
check is reported with its reason and not timed. Then, at each concurrency, that many connections
(threads, each with its own keep-alive socket or gRPC channel) send the same request over and over
for ``--duration`` seconds after one warm-up request each (none where the checked request took
longer than a run: the slow JSON cells of the peers); medians of ``--rounds``. The client sends
pre-built bytes and reads answers into a pre-sized buffer (REST: a raw HTTP/1.1 client on the
socket; gRPC: grpcio with no serializers, so the request is serialized once and answers stay
bytes), so the client costs little next to a server that parses and answers the payload.
**MB/s** is tensor megabytes (10^6 bytes) answered per second: each request carries the tensor in
and out, counted once. **p99** is over every request of the run (a few dozen for the slow JSON
cells, so it is nearly their maximum).

**copies**: the memory a request holds in the server, in tensors. For each (server, protocol) at 4
and 16 MiB, the servers are started again with glibc's mmap threshold fixed at 128 KiB
(``MALLOC_MMAP_THRESHOLD_``: every large buffer is its own mapping, returned to the system when freed,
so the baseline of one request is not inflated by the freed buffers of the last: glibc's default
raises the threshold after freeing one, and keeps later freed ones resident). Then, one request at a
time: reset each server process's peak RSS (``/proc/PID/clear_refs`` 5), read its RSS, send the
request, read its peak (``VmHWM``); (peak - RSS before) / tensor bytes, the median of
``--memory-repeats`` requests. It counts every user-space buffer alive at the same moment (the
received body, decoded arrays, the encoded answer, the client library's or the protocol stack's own
copies), not the kernel's socket buffers. An identity server that keeps one copy of the received
request and answers from it shows about 1.0; one that copies the tensor into a second buffer on the
way in or out shows about 2.0 (each copy alive at once adds one).

Targets (issue 26): at 16 MiB, inferd's binary REST and its gRPC at least **3x MLServer's** MB/s
(MLServer's best REST for binary, which it lacks), at concurrency 1 and at the highest; inferd's
binary REST and its gRPC ModelInfer each at most **1.25 copies** (one copy of the body plus the
header and allocator slack: the tensor copied at most once between the socket and the model, and
not on the way out).

    flock /tmp/inferd-bench.lock .venv/bin/python bench/payload_sweep.py [--duration 2] [--rounds 3]
        [--concurrency 1 4] [--sizes 4K 256K 4M 16M] [--only inferd,mlserver,kserve]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import grpc
import numpy as np
import orjson
from all import kserve_launch
from grpc_load import METHOD, GrpcLaunch, Peer, Served, start_all
from peers import interrupt
from v2_iris import (
    BENCH,
    HOST,
    ROOT,
    BenchError,
    Launch,
    _mlserver,
    free_port,
    machine_lines,
    process_tree,
    venv_tool,
    write_dated,
)

from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb

MODEL = "identity"
INFER_PATH = f"/v2/models/{MODEL}/infer"
SIZES = {"4K": 4 * 1024, "256K": 256 * 1024, "4M": 4 * 2**20, "16M": 16 * 2**20}
PROTOCOLS = ("json", "binary", "grpc")
#: The largest message every server is told to take (16 MiB of tensor as JSON is about 60 MB).
LIMIT = 256 * 2**20
MEMORY_SIZES = ("4M", "16M")
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(128 * 1024)}
TARGET_SIZE = "16M"
TARGET_RATIO = 3.0
TARGET_COPIES = 1.25
HEADER_LENGTH = "inference-header-content-length"
IO_TIMEOUT_S = 300.0


# ------------------------------------------------------------------------------------------ servers


def inferd_launch(workdir: Path) -> GrpcLaunch:
    """``inferd serve`` of the identity model, one worker, this checkout's code (PYTHONPATH first)."""
    port, grpc_port = free_port(), free_port()
    command = [
        venv_tool("inferd"), "serve", f"{BENCH / 'identity_model.py'}:Identity", "--name", MODEL,
        "--port", str(port), "--grpc-port", str(grpc_port), "--log-level", "warning",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "INFERD_MAX_BODY_SIZE": str(LIMIT)}
    return GrpcLaunch(Launch(command, ROOT, port, env), grpc_port)


def mlserver_launch(workdir: Path) -> GrpcLaunch:
    """MLServer in-process as bench/v2_iris.py starts it, serving bench/mlserver_identity.py instead
    of the iris model, with gRPC messages up to LIMIT (its default takes 4 MiB)."""
    launch = _mlserver(workdir, 0)
    settings = json.loads((workdir / "settings.json").read_text())
    settings["grpc_max_message_length"] = LIMIT
    (workdir / "settings.json").write_text(json.dumps(settings, indent=2))
    model = {"name": MODEL, "implementation": "mlserver_identity.Identity"}
    (workdir / "model-settings.json").write_text(json.dumps(model, indent=2))
    env = {**launch.env, "PYTHONPATH": str(BENCH)}
    return GrpcLaunch(dataclasses.replace(launch, env=env), settings["grpc_port"])


def kserve_launch_identity(workdir: Path) -> GrpcLaunch:
    """bench/kserve_identity.py as bench/all.py starts KServe, gRPC messages up to LIMIT."""
    limits = ("--grpc_max_send_message_length", str(LIMIT), "--grpc_max_receive_message_length", str(LIMIT))
    launch = kserve_launch(workdir, "kserve_identity.py", limits)
    return GrpcLaunch(launch, int(launch.command[launch.command.index("--grpc_port") + 1]))


PEERS = (
    Peer("inferd", "inferd 1 worker", inferd_launch, False),
    Peer("mlserver", "MLServer 1.7", mlserver_launch, False),
    Peer("kserve", "KServe 0.21", kserve_launch_identity, False),
)


def with_env(peer: Peer, extra: dict[str, str]) -> Peer:
    """``peer`` started with ``extra`` in its environment."""

    def prepare(workdir: Path) -> GrpcLaunch:
        found = peer.prepare(workdir)
        return dataclasses.replace(
            found, launch=dataclasses.replace(found.launch, env={**found.launch.env, **extra})
        )

    return dataclasses.replace(peer, prepare=prepare)


# ------------------------------------------------------------------------------------------ payloads


@dataclass(frozen=True)
class Payload:
    """One size's tensor and the request bytes of each protocol, built once."""

    tensor: np.ndarray
    json_body: bytes
    binary_body: bytes
    binary_header_length: int
    grpc_message: bytes

    @property
    def nbytes(self) -> int:
        return int(self.tensor.nbytes)


def payload(size: int) -> Payload:
    """A (1, size/4) FP32 tensor of normal noise (fixed seed) and its three requests."""
    tensor = np.random.default_rng(26).standard_normal((1, size // 4), dtype=np.float32)
    entry = {"name": "input-0", "shape": list(tensor.shape), "datatype": "FP32"}
    json_body = orjson.dumps(
        {"inputs": [{**entry, "data": tensor.ravel()}]}, option=orjson.OPT_SERIALIZE_NUMPY
    )
    header = orjson.dumps(
        {
            "inputs": [{**entry, "parameters": {"binary_data_size": tensor.nbytes}}],
            "parameters": {"binary_data_output": True},
        }
    )
    message = pb.ModelInferRequest(model_name=MODEL)
    message.inputs.add(name="input-0", datatype="FP32", shape=list(tensor.shape))
    message.raw_input_contents.append(tensor.tobytes())
    return Payload(tensor, json_body, header + tensor.tobytes(), len(header), message.SerializeToString())


# ------------------------------------------------------------------------------------------ clients


class HttpClient:
    """One keep-alive HTTP/1.1 connection: a pre-built request out, the answer read into one buffer
    (sized by its Content-Length, or grown chunk by chunk for a chunked answer), nothing parsed."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reconnect()

    def reconnect(self) -> None:
        """A new connection (servers close idle ones: uvicorn after 5 s, which a slow peer's
        warm-up on the other connections can take)."""
        if getattr(self, "sock", None) is not None:
            self.sock.close()
        self.sock = socket.create_connection((HOST, self.port), timeout=IO_TIMEOUT_S)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.pending = bytearray()  # received past what was consumed

    def close(self) -> None:
        self.sock.close()

    def post(self, head: bytes, body: bytes) -> tuple[int, dict[str, str], bytearray]:
        try:
            self.sock.sendall(head)
            self.sock.sendall(body)
            status_line = self._until(b"\r\n\r\n")
        except (BenchError, ConnectionError):  # a kept-alive connection the server closed meanwhile
            self.reconnect()
            self.sock.sendall(head)
            self.sock.sendall(body)
            status_line = self._until(b"\r\n\r\n")
        lines = status_line.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            answer = self._exactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            answer = bytearray()
            while size := int(self._until(b"\r\n").split(b";")[0], 16):
                answer += self._exactly(size)
                self._exactly(2)
            self._until(b"\r\n")  # no trailers are sent: the empty line ending the body
        else:
            raise BenchError(f"an answer with neither Content-Length nor chunks: {headers}")
        return int(lines[0].split()[1]), headers, answer

    def _fill(self) -> None:
        chunk = self.sock.recv(262144)
        if not chunk:
            raise BenchError("the server closed the connection")
        self.pending += chunk

    def _until(self, mark: bytes) -> bytearray:
        """The bytes before ``mark`` (consumed with it)."""
        while (end := self.pending.find(mark)) < 0:
            self._fill()
        found = self.pending[:end]
        del self.pending[: end + len(mark)]
        return found

    def _exactly(self, length: int) -> bytearray:
        """The next ``length`` bytes, read straight into their buffer past what is pending."""
        answer = bytearray(length)
        view = memoryview(answer)
        got = min(len(self.pending), length)
        view[:got] = self.pending[:got]
        del self.pending[:got]
        while got < length:
            count = self.sock.recv_into(view[got:])
            if not count:
                raise BenchError("the server closed the connection mid-answer")
            got += count
        return answer


def http_head(port: int, length: int, header_length: int | None) -> bytes:
    extra = "" if header_length is None else f"Inference-Header-Content-Length: {header_length}\r\n"
    content_type = "application/json" if header_length is None else "application/octet-stream"
    return (
        f"POST {INFER_PATH} HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {length}\r\n{extra}\r\n"
    ).encode()


class GrpcClient:
    """One gRPC channel; ModelInfer with no serializers: the request's bytes in, the answer's out."""

    def __init__(self, port: int) -> None:
        options = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]
        self.channel = grpc.insecure_channel(f"{HOST}:{port}", options=options)
        self.call = self.channel.unary_unary(METHOD)

    def close(self) -> None:
        self.channel.close()


#: An answer's body and its HTTP headers (none for gRPC).
Answer = tuple[bytes | bytearray, dict[str, str]]


@dataclass(frozen=True)
class Protocol:
    """How one protocol sends a payload: ``connect`` (a client on a server), ``send`` (one request,
    its answer's bytes) and ``check`` (the answer equals the input, else BenchError)."""

    key: str
    connect: Callable[[Served], HttpClient | GrpcClient]
    send: Callable[[HttpClient | GrpcClient, Served, Payload], Answer]
    check: Callable[[Answer, Payload], None]


def _send_json(client: HttpClient | GrpcClient, served: Served, data: Payload) -> Answer:
    assert isinstance(client, HttpClient)
    head = http_head(served.running.port, len(data.json_body), None)
    return _ok(*client.post(head, data.json_body))


def _send_binary(client: HttpClient | GrpcClient, served: Served, data: Payload) -> Answer:
    assert isinstance(client, HttpClient)
    head = http_head(served.running.port, len(data.binary_body), data.binary_header_length)
    return _ok(*client.post(head, data.binary_body))


def _ok(status: int, headers: dict[str, str], answer: bytearray) -> Answer:
    if status != 200:
        raise BenchError(f"status {status}: {bytes(answer[:300])!r}")
    return answer, headers


def _send_grpc(client: HttpClient | GrpcClient, served: Served, data: Payload) -> Answer:
    assert isinstance(client, GrpcClient)
    try:
        answer: bytes = client.call(data.grpc_message, timeout=IO_TIMEOUT_S)
    except grpc.RpcError as exc:
        raise BenchError(f"ModelInfer failed: {exc.code()} {exc.details()}") from None
    return answer, {}


def _check_json(answer: Answer, data: Payload) -> None:
    output = orjson.loads(answer[0])["outputs"][0]
    array = np.asarray(output["data"], dtype=np.float32).reshape(output["shape"])
    if array.shape != data.tensor.shape or not np.array_equal(array, data.tensor):
        raise BenchError("the JSON answer's tensor differs from the input")


def _check_binary(answer: Answer, data: Payload) -> None:
    body, headers = answer
    if HEADER_LENGTH not in headers:
        raise BenchError(f"no binary answer (no {HEADER_LENGTH} header): {bytes(body[:300])!r}")
    length = int(headers[HEADER_LENGTH])
    header = orjson.loads(body[:length])
    output = header["outputs"][0]
    size = output.get("parameters", {}).get("binary_data_size")
    if size != data.nbytes or output["shape"] != list(data.tensor.shape):
        raise BenchError(f"the binary answer's header does not describe the input: {output}")
    if body[length : length + size] != data.tensor.tobytes():
        raise BenchError("the binary answer's bytes differ from the input's")


def _check_grpc(answer: Answer, data: Payload) -> None:
    message = pb.ModelInferResponse.FromString(bytes(answer[0]))
    if not message.raw_output_contents:
        raise BenchError("the answer carries no raw_output_contents")
    if list(message.outputs[0].shape) != list(data.tensor.shape):
        raise BenchError(f"the answer's shape {list(message.outputs[0].shape)} is not the input's")
    if message.raw_output_contents[0] != data.tensor.tobytes():
        raise BenchError("the answer's raw_output_contents differ from the input's bytes")


PROTOCOL_TABLE = {
    "json": Protocol("json", lambda served: HttpClient(served.running.port), _send_json, _check_json),
    "binary": Protocol("binary", lambda served: HttpClient(served.running.port), _send_binary, _check_binary),
    "grpc": Protocol("grpc", lambda served: GrpcClient(served.grpc_port), _send_grpc, _check_grpc),
}


# ------------------------------------------------------------------------------------------ timing


@dataclass(frozen=True)
class Run:
    mb_per_s: float
    p99_ms: float
    requests: int


def timed(
    served: Served, protocol: Protocol, data: Payload, concurrency: int, seconds: float, warm_up: bool
) -> Run:
    """``concurrency`` clients sending ``data`` back to back for ``seconds``, after a warm-up request
    each when ``warm_up``."""
    clients = [protocol.connect(served) for _ in range(concurrency)]
    latencies: list[list[float]] = [[] for _ in clients]
    failures: list[BaseException] = []
    try:
        for client in clients if warm_up else ():
            protocol.send(client, served, data)
        start = time.perf_counter()
        deadline = start + seconds

        def loop(index: int) -> None:
            try:
                while time.perf_counter() < deadline:
                    began = time.perf_counter()
                    protocol.send(clients[index], served, data)
                    latencies[index].append(time.perf_counter() - began)
            except BaseException as exc:  # reported by the caller, not lost in the thread
                failures.append(exc)

        threads = [threading.Thread(target=loop, args=(index,)) for index in range(concurrency)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - start
    finally:
        for client in clients:
            client.close()
    if failures:
        raise BenchError(f"{served.peer.key} {protocol.key}: {failures[0]}")
    every = [latency for one in latencies for latency in one]
    return Run(len(every) * data.nbytes / wall / 1e6, float(np.percentile(every, 99)) * 1000, len(every))


# ------------------------------------------------------------------------------------------ memory


def _status_kib(pid: int, field_name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    raise BenchError(f"no {field_name} for process {pid}")


def server_pids(served: Served) -> list[int]:
    return [pid for pid, _ in process_tree(served.running.process.pid)]


def held_copies(served: Served, protocol: Protocol, data: Payload, repeats: int) -> float:
    """The median over ``repeats`` requests of (peak RSS - RSS before) / tensor bytes, summed over
    the server's processes; see the module's docstring."""
    client = protocol.connect(served)
    try:
        protocol.send(client, served, data)  # warm: lazily built state is not the request's
        held = []
        pids = server_pids(served)
        for _ in range(repeats):
            for pid in pids:
                Path(f"/proc/{pid}/clear_refs").write_text("5")
            before = sum(_status_kib(pid, "VmRSS") for pid in pids)
            protocol.send(client, served, data)
            peak = sum(_status_kib(pid, "VmHWM") for pid in pids)
            held.append((peak - before) * 1024 / data.nbytes)
    finally:
        client.close()
    return statistics.median(held)


# ------------------------------------------------------------------------------------------ run


Key = tuple[str, str, str]  # server, protocol, size


@dataclass
class Results:
    runs: dict[tuple[str, str, str, int], list[Run]] = field(default_factory=dict)
    copies: dict[Key, float] = field(default_factory=dict)
    unsupported: dict[Key, str] = field(default_factory=dict)
    first_seconds: dict[Key, float] = field(default_factory=dict)  # the checked request's time


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=2.0, help="seconds per measured run [2]")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over every cell [3]")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--protocols", nargs="+", default=list(PROTOCOLS), choices=list(PROTOCOLS))
    parser.add_argument("--memory-repeats", type=int, default=5, help="requests per memory figure [5]")
    parser.add_argument("--only", default=",".join(peer.key for peer in PEERS), help="servers, by key")
    return parser.parse_args()


def check_all(
    servers: list[Served], payloads: dict[str, Payload], args: argparse.Namespace, results: Results
) -> None:
    """Every cell's answer must equal its input; a peer's failure marks the cell, inferd's stops the run."""
    for served in servers:
        for key in args.protocols:
            protocol = PROTOCOL_TABLE[key]
            for size in args.sizes:
                client = protocol.connect(served)
                try:
                    began = time.perf_counter()
                    protocol.check(protocol.send(client, served, payloads[size]), payloads[size])
                    results.first_seconds[(served.peer.key, key, size)] = time.perf_counter() - began
                except (BenchError, KeyError, ValueError, orjson.JSONDecodeError) as exc:
                    if served.peer.key == "inferd":
                        raise BenchError(f"inferd {key} {size}: {exc}") from None
                    results.unsupported[(served.peer.key, key, size)] = str(exc)[:200]
                    print(f"{served.peer.key} {key} {size}: not measured: {str(exc)[:200]}", flush=True)
                finally:
                    client.close()


def measure(
    servers: list[Served], payloads: dict[str, Payload], args: argparse.Namespace, results: Results
) -> None:
    for round_ in range(1, args.rounds + 1):
        for size in args.sizes:
            for concurrency in args.concurrency:
                for key in args.protocols:
                    for served in servers:
                        if (served.peer.key, key, size) in results.unsupported:
                            continue
                        # A request slower than the run gains nothing from a warm-up but time.
                        warm_up = results.first_seconds[(served.peer.key, key, size)] < args.duration
                        run = timed(
                            served, PROTOCOL_TABLE[key], payloads[size], concurrency, args.duration, warm_up
                        )
                        results.runs.setdefault((served.peer.key, key, size, concurrency), []).append(run)
                        print(
                            f"round {round_} {size:>4} c{concurrency} {key:<6} {served.peer.key:<8} "
                            f"{run.mb_per_s:9.1f} MB/s  p99 {run.p99_ms:8.1f} ms  ({run.requests} requests)",
                            flush=True,
                        )


def measure_memory(
    peers: list[Peer], payloads: dict[str, Payload], args: argparse.Namespace, results: Results, tmp: Path
) -> None:
    """The servers started again under MALLOC_ENV, one at a time; copies per (server, protocol, size)."""
    sizes = [size for size in MEMORY_SIZES if size in args.sizes]
    for peer in peers:
        with ExitStack() as stack:
            workdir = tmp / "memory"
            workdir.mkdir(exist_ok=True)
            (served,) = start_all([with_env(peer, MALLOC_ENV)], stack, workdir)  # in workdir/KEY
            for key in args.protocols:
                for size in sizes:
                    if (peer.key, key, size) in results.unsupported:
                        continue
                    copies = held_copies(served, PROTOCOL_TABLE[key], payloads[size], args.memory_repeats)
                    results.copies[(peer.key, key, size)] = copies
                    print(f"memory {peer.key:<8} {key:<6} {size:>4}: {copies:.2f} tensors held", flush=True)


def median_run(results: Results, server: str, key: str, size: str, concurrency: int) -> Run | None:
    runs = results.runs.get((server, key, size, concurrency))
    if not runs:
        return None
    return Run(
        statistics.median(run.mb_per_s for run in runs),
        statistics.median(run.p99_ms for run in runs),
        sum(run.requests for run in runs),
    )


def mlserver_reference(results: Results, key: str, size: str, concurrency: int) -> tuple[str, Run | None]:
    """What inferd's ``key`` is compared with at MLServer: the same protocol, or for binary REST
    (which MLServer lacks) its JSON REST."""
    if key == "binary" and ("mlserver", "binary", size) in results.unsupported:
        return "json", median_run(results, "mlserver", "json", size, concurrency)
    return key, median_run(results, "mlserver", key, size, concurrency)


def report(
    args: argparse.Namespace, servers: list[str], results: Results, load: tuple[float, float, float]
) -> str:
    lines = [
        f"# bench/payload_sweep.py --duration {args.duration} --rounds {args.rounds} --concurrency "
        f"{' '.join(map(str, args.concurrency))}, {datetime.now(timezone.utc):%Y-%m-%dT%H:%MZ}",
        *machine_lines(load),
        "# identity model, FP32 (1, n); MB/s: tensor MB (10^6 bytes) answered per second; p99 over all "
        f"requests; medians of {args.rounds} rounds; copies: (peak RSS - RSS before) / tensor bytes "
        "per request (see the script's docstring)",
        f"{'size':>5}  {'c':>2}  {'protocol':<8}  {'server':<9}  {'MB/s':>9}  {'p99 ms':>9}  {'copies':>6}"
        f"  {'inferd / this':>13}",
    ]
    for size in args.sizes:
        for concurrency in args.concurrency:
            for key in args.protocols:
                ours = median_run(results, "inferd", key, size, concurrency)
                for server in servers:
                    copies = results.copies.get((server, key, size))
                    shown = f"{copies:.2f}" if copies is not None else ""
                    if (server, key, size) in results.unsupported:
                        lines.append(
                            f"{size:>5}  {concurrency:>2}  {key:<8}  {server:<9}  {'unsupported':>9}"
                        )
                        continue
                    one = median_run(results, server, key, size, concurrency)
                    if one is None:
                        continue
                    ratio = f"{ours.mb_per_s / one.mb_per_s:.2f}x" if ours and server != "inferd" else ""
                    lines.append(
                        f"{size:>5}  {concurrency:>2}  {key:<8}  {server:<9}  {one.mb_per_s:>9.1f}  "
                        f"{one.p99_ms:>9.1f}  {shown:>6}  {ratio:>13}"
                    )
    lines.extend(targets(args, results))
    for (server, key, size), why in sorted(results.unsupported.items()):
        lines.append(f"not measured: {server} {key} {size}: {why}")
    return "\n".join(lines) + "\n"


def targets(args: argparse.Namespace, results: Results) -> Iterator[str]:
    if TARGET_SIZE not in args.sizes:
        return
    for key in ("binary", "grpc"):
        for concurrency in (min(args.concurrency), max(args.concurrency)):
            ours = median_run(results, "inferd", key, TARGET_SIZE, concurrency)
            against, theirs = mlserver_reference(results, key, TARGET_SIZE, concurrency)
            if ours is None or theirs is None:
                continue
            ratio = ours.mb_per_s / theirs.mb_per_s
            verdict = "PASS" if ratio >= TARGET_RATIO else "FAIL"
            yield (
                f"target: {TARGET_SIZE} c{concurrency} inferd {key} >= {TARGET_RATIO:.0f}x MLServer "
                f"{against} MB/s: {ratio:.2f}x {verdict}"
            )
    for key, shown in (("binary", "binary REST"), ("grpc", "gRPC")):
        copies = results.copies.get(("inferd", key, TARGET_SIZE))
        if copies is not None:
            verdict = "PASS" if copies <= TARGET_COPIES else "FAIL"
            yield (
                f"target: {TARGET_SIZE} inferd {shown} holds <= {TARGET_COPIES} tensors per request: "
                f"{copies:.2f} {verdict}"
            )


def main() -> int:
    args = arguments()
    wanted = set(args.only.split(","))
    peers = [peer for peer in PEERS if peer.key in wanted]
    signal.signal(signal.SIGTERM, interrupt)  # stop the servers as on Ctrl+C
    payloads = {size: payload(SIZES[size]) for size in args.sizes}
    load = os.getloadavg()
    results = Results()
    with tempfile.TemporaryDirectory(prefix="payload-sweep-") as tmp:
        try:
            with ExitStack() as stack:
                servers = list(start_all(peers, stack, Path(tmp)))
                check_all(servers, payloads, args, results)
                measure(servers, payloads, args, results)
            measure_memory(peers, payloads, args, results, Path(tmp))
        except BenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    return write_dated("payload-sweep", report(args, [peer.key for peer in peers], results, load))


if __name__ == "__main__":
    sys.exit(main())
