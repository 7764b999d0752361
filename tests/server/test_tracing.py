"""OpenTelemetry traces on real servers, received by an OTLP/HTTP receiver on loopback
(tests/otlp.py): the caller's ``traceparent`` is every request span's parent, over REST and gRPC;
decode, model and encode spans are its children; a graph's remote node answers within the caller's
trace; a batch span links to each request it served; with tracing off nothing of OpenTelemetry is
imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from inferd.core.tracing import wanted
from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb
from inferd.protocols.v2._generated import grpc_predict_v2_pb2_grpc as pb_grpc
from tests.conftest import IRIS
from tests.dialects.graph.conftest import predict, write_graph
from tests.dialects.graph.test_remote import ENV as GRAPH_ENV
from tests.dialects.graph.test_remote import FRAGILE
from tests.otlp import Receiver, Span, otel_env, otlp_receiver
from tests.servers import ROOT, serve

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE}-{PARENT}-01"
UNSAMPLED = "4bf92f3577b34da6a3ce929d0e0e4737"
IRIS_BODY = {"inputs": [{"name": "input-0", "shape": [1, 4], "datatype": "FP32", "data": [6.7, 3, 5.2, 2.3]}]}


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with otlp_receiver() as found:
        yield found


def in_trace(spans: list[Span], trace: str) -> list[Span]:
    return [span for span in spans if span.trace_id == trace]


def named(spans: list[Span], name: str) -> Span:
    matching = [span for span in spans if span.name == name]
    assert len(matching) == 1, (name, [s.name for s in spans])
    return matching[0]


def has(*names: str, trace: str = TRACE) -> Callable[[list[Span]], bool]:
    return lambda spans: set(names) <= {span.name for span in in_trace(spans, trace)}


def check_steps(spans: list[Span], request: Span) -> None:
    for step in ("inferd.decode", "inferd.model", "inferd.encode"):
        assert named(spans, step).parent_id == request.span_id, step


def test_a_v2_rest_call_is_traced_under_the_callers_traceparent(receiver: Receiver) -> None:
    with serve(IRIS, "--tracing", "--no-grpc", env=otel_env(receiver, "iris-rest")) as server:
        url = f"{server.http_url}/v2/models/iris/infer"
        unsampled = f"00-{UNSAMPLED}-{PARENT}-00"  # the caller did not sample it: no spans
        assert httpx.post(url, json=IRIS_BODY, headers={"traceparent": unsampled}).status_code == 200
        assert httpx.post(url, json=IRIS_BODY, headers={"traceparent": TRACEPARENT}).status_code == 200
        spans = receiver.wait_for(has("POST /v2/models/iris/infer", "inferd.encode"))
        assert in_trace(spans, UNSAMPLED) == []
        spans = in_trace(spans, TRACE)
    request = named(spans, "POST /v2/models/iris/infer")
    assert (request.kind, request.parent_id, request.service) == ("SERVER", PARENT, "iris-rest")
    assert request.attributes["inferd.model"] == "iris"
    assert request.attributes["inferd.protocol"] == "rest"
    assert request.attributes["http.response.status_code"] == 200
    check_steps(spans, request)


def test_a_v2_grpc_call_is_traced_under_the_callers_traceparent(receiver: Receiver) -> None:
    trace = "0af7651916cd43dd8448eb211c80319c"
    method = "inference.GRPCInferenceService/ModelInfer"
    with (
        serve(IRIS, "--tracing", env=otel_env(receiver, "iris-grpc")) as server,
        server.grpc_channel() as channel,
    ):
        request = pb.ModelInferRequest(model_name="iris")
        tensor = request.inputs.add(name="input-0", datatype="FP32", shape=[1, 4])
        tensor.contents.fp32_contents.extend([6.7, 3, 5.2, 2.3])
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        stub.ModelInfer(request, metadata=[("traceparent", f"00-{trace}-{PARENT}-01")], timeout=30)
        spans = in_trace(receiver.wait_for(has(method, "inferd.encode", trace=trace)), trace)
    served = named(spans, method)
    assert (served.kind, served.parent_id) == ("SERVER", PARENT)
    assert served.attributes["inferd.model"] == "iris"
    assert served.attributes["inferd.protocol"] == "grpc"
    assert served.attributes["rpc.grpc.status_code"] == "OK"
    check_steps(spans, served)


@pytest.mark.parametrize("protocol", ["REST", "GRPC"])
def test_a_remote_graph_node_answers_within_the_callers_trace(
    protocol: str, receiver: Receiver, tmp_path: Path
) -> None:
    """The graph server (service "caller") calls another server's Seldon component (started with
    Seldon's --tracing, service "callee"): one trace, the callee's request span a child of the
    caller's client span."""
    trace = "5bf92f3577b34da6a3ce929d0e0e47" + ("01" if protocol == "REST" else "02")
    callee_env = {**GRAPH_ENV, **otel_env(receiver, f"callee-{protocol}")}
    with serve("Remote", "--dialect", "seldon", "--tracing", env=callee_env) as callee:
        assert callee.grpc_address is not None
        port = (callee.http_url if protocol == "REST" else callee.grpc_address).rsplit(":", 1)[1]
        path = write_graph(tmp_path, "fragile.yaml", FRAGILE, PORT=port, TYPE=protocol)
        caller_env = {**GRAPH_ENV, **otel_env(receiver, f"caller-{protocol}"), "INFERD_TRACING": "true"}
        with serve(str(path), env=caller_env) as caller:
            traceparent = f"00-{trace}-{PARENT}-01"
            answer = predict(caller.http_url, [[0, 1]], headers={"traceparent": traceparent})
            assert answer.json()["data"]["ndarray"] == [[0, 3]]  # the remote node's answer

            def both(spans: list[Span]) -> bool:
                services = {span.service for span in in_trace(spans, trace) if span.kind == "SERVER"}
                return services == {f"caller-{protocol}", f"callee-{protocol}"}

            spans = in_trace(receiver.wait_for(both), trace)
    by_id = {span.span_id: span for span in spans}
    caller_request = next(s for s in spans if s.kind == "SERVER" and s.service == f"caller-{protocol}")
    callee_request = next(s for s in spans if s.kind == "SERVER" and s.service == f"callee-{protocol}")
    assert caller_request.parent_id == PARENT
    client = by_id[callee_request.parent_id]
    assert (client.kind, client.service, client.attributes["inferd.node"]) == (
        "CLIENT",
        f"caller-{protocol}",
        "remote",
    )
    ancestor = client
    while ancestor.parent_id in by_id:  # the client span lies within the caller's request span
        ancestor = by_id[ancestor.parent_id]
    assert ancestor == caller_request
    assert callee_request.attributes["inferd.model"]


def test_a_batch_span_links_to_each_request_span(receiver: Receiver) -> None:
    traces = [f"{index:032x}" for index in range(0xB0, 0xB4)]
    env = otel_env(receiver, "batching")
    args = ("--tracing", "--no-grpc", "--max-batch-size", "4", "--max-batch-time-ms", "500")
    with serve(IRIS, *args, env=env) as server:

        def call(trace: str) -> int:
            headers = {"traceparent": f"00-{trace}-{PARENT}-01"}
            url = f"{server.http_url}/v2/models/iris/infer"
            return httpx.post(url, json=IRIS_BODY, headers=headers, timeout=30).status_code

        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(call, traces)) == [200] * 4

        def linked(spans: list[Span]) -> bool:
            links = {link for span in spans if span.name == "inferd.batch" for link in span.links}
            return {trace for trace, _ in links} >= set(traces)

        def complete(spans: list[Span]) -> bool:
            return linked(spans) and all(has("inferd.encode", trace=trace)(spans) for trace in traces)

        spans = receiver.wait_for(complete)
    requests = {span.trace_id: span for span in spans if span.kind == "SERVER" and span.trace_id in traces}
    batches = [span for span in spans if span.name == "inferd.batch" and span.links]
    links = {link for batch in batches for link in batch.links}
    assert {(trace, requests[trace].span_id) for trace in traces} <= links
    assert max(batch.attributes["inferd.batch.requests"] for batch in batches) > 1  # they did share a batch
    for trace in traces:
        mine = in_trace(spans, trace)
        assert named(mine, "inferd.batch.wait").parent_id == named(mine, "inferd.model").span_id


OFF_CHECK = """
import sys
from inferd.config.settings import Settings
from inferd.server.app import build_runtime, create_app
from inferd.server.grpc import create_grpc_server
import inferd.dialects.graph.nodes, inferd.core.batching, inferd.cli.serve
runtime = build_runtime(Settings(target=sys.argv[1]))
create_app(runtime)
create_grpc_server(runtime)
tracing = {"inferd.core." + name for name in ("tracer", "spans", "otlp", "export", "otel")}
print([name for name in sys.modules if name.startswith("opentelemetry") or name in tracing])
"""


def test_with_tracing_off_nothing_of_opentelemetry_is_imported() -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    env["PYTHONPATH"] = str(ROOT)
    env.pop("INFERD_TRACING", None)
    done = subprocess.run(
        [sys.executable, "-c", OFF_CHECK, IRIS],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1].replace("'", '"')) == []


@pytest.mark.parametrize(
    ("setting", "environ", "on"),
    [
        (False, {}, False),
        (True, {}, True),
        (False, {"OTEL_TRACES_EXPORTER": "otlp"}, True),
        (False, {"OTEL_TRACES_EXPORTER": "none"}, False),
        (False, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        (False, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, False),  # shared with metrics, logs
        (True, {"OTEL_SDK_DISABLED": "true"}, False),
    ],
)
def test_when_tracing_is_on(setting: bool, environ: dict[str, str], on: bool) -> None:
    assert wanted(setting, environ) is on
