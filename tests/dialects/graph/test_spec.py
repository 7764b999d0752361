"""Reading graph files: the three shapes, and bad files refused with what is wrong and where."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from inferd.core.errors import TargetError
from inferd.dialects import detect
from inferd.dialects.graph import spec
from inferd.dialects.graph.executor import route_of
from tests.dialects.graph.conftest import COMPONENTS, write_graph
from tests.servers import inferd_command


def load(tmp_path: Path, text: str, name: str = "graph.yaml") -> spec.GraphSpec:
    return spec.load(write_graph(tmp_path, name, text))


def refused(tmp_path: Path, text: str) -> str:
    with pytest.raises(TargetError) as caught:
        load(tmp_path, text)
    return caught.value.message


def test_the_short_form_nested_and_flat_read_the_same(tmp_path: Path) -> None:
    nested = load(tmp_path, "graph: {name: a, target: A, children: [{name: b, target: B}]}")
    flat = load(tmp_path, "name: a\nnodes: {b: {target: B}, a: {target: A, children: [b]}}")
    assert nested == flat
    assert nested.name == "a" and [node.name for node in nested.root.walk()] == ["a", "b"]
    assert nested.root.type == "MODEL" and nested.root.input_method == "predict"


def test_a_seldon_deployment_as_json(tmp_path: Path) -> None:
    text = """{"kind": "SeldonDeployment", "metadata": {"name": "dep"}, "spec": {"predictors": [
        {"name": "p", "componentSpecs": [{"spec": {"containers": [
            {"name": "m", "image": "org/m:2", "env": [{"name": "MODEL_NAME", "value": "MyModel"}]}]}}],
         "graph": {"name": "ab", "implementation": "RANDOM_ABTEST",
                   "parameters": [{"name": "ratioA", "value": "0.25", "type": "FLOAT"}],
                   "children": [{"name": "m", "type": "MODEL", "endpoint": {"type": "REST"}},
                                {"name": "r", "endpoint": {"service_host": "h", "grpcPort": 5001,
                                                           "type": "GRPC"}}]}}]}}"""
    graph = load(tmp_path, text, "dep.json")
    root = graph.root
    assert graph.name == "p" and root.type == "ROUTER" and root.parameters == {"ratioA": 0.25}
    local, remote = root.children
    assert (local.target, local.dialect, local.image, local.endpoint) == (
        "MyModel",
        "seldon",
        "org/m:2",
        None,
    )
    assert remote.endpoint == spec.Endpoint("h", 5001, "GRPC")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "root: a\nnodes: {a: {target: A, children: [b]}, b: {target: B, children: [a]}}",
            "cycle: a -> b -> a",
        ),
        ("nodes: {a: {target: A, children: [b]}, b: {target: B, children: [a]}}", "cannot tell the root"),
        ("graph: &g {name: a, target: A, children: [*g]}", "cycle: a -> a"),
        ("graph: {name: a, type: SPLITTER, target: A}", "unknown type 'SPLITTER'"),
        ("graph: {name: r, type: ROUTER, target: R}", "a router needs children"),
        ("graph: {name: c, type: COMBINER, target: C, children: []}", "a combiner needs children"),
        ("graph: {name: r, methods: [ROUTE], target: R}", "a router needs children"),
        ("graph: {name: a, target: A, children: [{name: a, target: A}]}", "cycle: a -> a"),
        (
            "graph: {name: a, target: A, children: [{name: b, target: B}, {name: b, target: B}]}",
            "appears twice",
        ),
        ("graph: {name: a, target: A, chidren: []}", "unknown key(s) ['chidren']"),
        ("graph: {name: a, target: A, children: [c]}", "unknown node 'c'"),
        ("graph: {name: a}", "nothing to run"),
        ("graph: {name: a, implementation: SKLEARN_SERVER}", "'SKLEARN_SERVER' needs a modelUri"),
        ("graph: {name: a, implementation: ONNX_SERVER}", "'ONNX_SERVER' is not one inferd runs"),
        (
            "graph: {name: a, implementation: HUGGINGFACE_SERVER, modelUri: gs://m/hf}",
            "node 'a': implementation 'HUGGINGFACE_SERVER' is Seldon's prepackaged server for a Hugging Face",
        ),
        ("graph: {name: a, implementation: MLSERVER, modelUri: m}", "which inferd cannot run"),
        ("graph: {name: a, endpoint: {host: h, type: REST}}", "endpoint needs a port"),
        ("graph: {name: a, endpoint: {host: h, port: 1, type: KAFKA}}", "neither REST nor GRPC"),
        ("graph: {name: a, target: A, parameters: [{name: x, value: y, type: INT}]}", "not a valid INT"),
        ("graph: {name: ab, implementation: RANDOM_ABTEST, children: [{name: b, target: B}]}", "2 children"),
        ("nodes: {a: {target: A}, b: {target: B}}\nroot: a", "not reachable from the root"),
        ("kind: SeldonDeployment\nspec: {predictors: []}", "needs spec.predictors"),
        ("graph: {name: a, target: A, replicas: 0}", "'replicas' must be a whole number of at least 1"),
        ("graph: {name: a, target: A, autoscale: '3:1'}", "'autoscale' must be 'MIN:MAX'"),
        ("graph: {name: a, target: A, autoscale: 2}", "'autoscale' must be 'MIN:MAX'"),
        ("graph: {name: a, target: A, num_cpus: 0}", "'num_cpus' must be a number above 0"),
    ],
)
def test_bad_graphs_say_what_is_wrong(tmp_path: Path, text: str, problem: str) -> None:
    assert problem in refused(tmp_path, text)


def test_a_nodes_deployment_scale(tmp_path: Path) -> None:
    """Its own keys, else its SeldonDeployment component's replicas, else the server's (None)."""
    short = load(
        tmp_path,
        "graph: {name: a, target: A, autoscale: '0:3', num_cpus: 0.5, children: [b]}\n"
        "nodes: {b: {target: B, replicas: 2}}",
    )
    assert [node.scale for node in short.root.walk()] == [spec.Scale(None, "0:3", 0.5), spec.Scale(2)]
    deployment = """{"kind": "SeldonDeployment", "spec": {"predictors": [{"name": "p", "componentSpecs": [
        {"replicas": 3,
         "spec": {"containers": [{"name": "m", "env": [{"name": "MODEL_NAME", "value": "M"}]}]}}],
        "graph": {"name": "m", "type": "MODEL"}}]}}"""
    assert load(tmp_path, deployment, "dep.json").root.scale == spec.Scale(replicas=3)
    assert load(tmp_path, "graph: {name: a, target: A}").root.scale == spec.Scale()


def test_errors_name_the_node(tmp_path: Path) -> None:
    message = refused(tmp_path, "graph: {name: top, target: A, children: [{name: low, type: X, target: B}]}")
    assert "node 'low': unknown type 'X'" in message


def test_graph_files_are_detected_by_content(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, "g.yaml", "graph: {name: a, target: A}")
    cortex = write_graph(tmp_path, "cortex.yaml", "- kind: api\n  name: x\n  model: m.onnx\n")
    assert spec.looks_like_graph(graph) and not spec.looks_like_graph(cortex)
    assert detect(str(COMPONENTS / "everything.yaml")).name == "graph"


@pytest.mark.parametrize(
    ("answer", "route"),
    [
        ({"data": {"ndarray": [[1]]}}, 1),
        ({"data": {"tensor": {"shape": [1, 1], "values": [-2.0]}}}, -2),
        ([0], 0),
        ({"data": {"ndarray": [["x"]]}}, None),
        ({"strData": "1"}, None),
    ],
)
def test_route_of_a_router_answer(answer: object, route: int | None) -> None:
    assert route_of(answer) == route


def test_serving_a_bad_graph_fails_before_listening(tmp_path: Path) -> None:
    path = write_graph(tmp_path, "bad.yaml", "graph: {name: r, type: ROUTER, target: R}")
    done = subprocess.run(inferd_command("serve", str(path)), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "node 'r': a router needs children to route to" in " ".join(done.stderr.split())


def test_a_prepackaged_server_runs_inferds_class_on_its_model_uri(tmp_path: Path) -> None:
    node = load(tmp_path, "graph: {name: clf, implementation: SKLEARN_SERVER, modelUri: s3://b/iris/}").root
    assert (node.target, node.dialect, node.model_uri) == (
        "inferd.dialects.seldon.prepackaged:SKLearnServer",
        "seldon",
        "s3://b/iris/",
    )
    assert node.image == "seldonio/sklearnserver"


def test_code_or_an_address_replaces_the_prepackaged_server(tmp_path: Path) -> None:
    """A node that names its code or the server to call runs that, even one inferd cannot run."""
    remote = "graph: {name: x, implementation: XGBOOST_SERVER, endpoint: {service_host: h, port: 9000}}"
    assert load(tmp_path, remote).root.endpoint == spec.Endpoint("h", 9000, "REST")
    local = load(tmp_path, "graph: {name: x, implementation: SKLEARN_SERVER, modelUri: m, target: A}").root
    assert (local.target, local.model_uri) == ("A", None)
