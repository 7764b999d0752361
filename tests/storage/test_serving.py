"""Models in object storage, served end to end by ``inferd serve``: a Cortex project whose
``cortex.yaml`` names its model in S3 serves unchanged; the workers of a server download a model
once; a whole project is served from its URI, and a project whose ``inferd.yaml`` names its code
there; a graph node's code is fetched; a model that cannot be fetched stops start-up with exit 1,
naming the API (or node) and the URI, and leaves nothing in the cache."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.dialects.cortex import projects
from tests.dialects.graph.conftest import COMPONENTS
from tests.servers import ROOT, inferd_command, serve
from tests.storage.conftest import Bucket
from tests.storage.files_server import FileServer, Served

IRIS_V2 = {
    "inputs": [{"name": "input-0", "shape": [1, 4], "datatype": "FP32", "data": [[5.1, 3.5, 1.4, 0.2]]}]
}


def cortex_project(folder: Path, model: str) -> Path:
    """The 0.10 iris project of the Cortex tests, its model named by ``model``."""
    files = {**projects.V10, "cortex.yaml": projects.V10["cortex.yaml"].replace("models/iris.onnx", model)}
    return projects.write(folder, files)


def iris_bytes(tmp_path: Path) -> bytes:
    projects.iris_onnx(tmp_path / "iris.onnx")
    return (tmp_path / "iris.onnx").read_bytes()


def entries(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "model-cache" / "entries").glob("*"))


def start_fails(target: Path, data: Path) -> str:
    """``inferd serve TARGET`` exits 1 (a model that cannot be had) before it serves: its message."""
    command = inferd_command("serve", str(target), "--port", "0", "--grpc-port", "0", "--data-dir", str(data))
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    message = " ".join(done.stderr.split())
    assert done.returncode == 1, message
    return message


def classify(url: str) -> str:
    answer = httpx.post(url + "/iris/classifier", json=projects.SETOSA, timeout=10)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["label"])


def test_a_cortex_model_in_s3_serves_unchanged(bucket: Bucket, tmp_path: Path) -> None:
    uri = bucket.put("exports/iris.onnx", iris_bytes(tmp_path))
    folder = cortex_project(tmp_path / "project", uri)
    data = tmp_path / "data"
    with serve(str(folder), "--data-dir", str(data)) as server:
        assert classify(server.http_url) == "iris-setosa"
        assert counted(server.http_url) == {"download": 1.0, "loaded": 1.0}
        assert f"downloaded {uri}" in server.wait_for_log(f"downloaded {uri}")
    assert len(entries(data)) == 1
    with serve(str(folder), "--data-dir", str(data)) as again:  # a restart finds it in the cache
        assert classify(again.http_url) == "iris-setosa"
        assert counted(again.http_url) == {"cache": 1.0, "loaded": 1.0}
    assert len(entries(data)) == 1


def counted(url: str) -> dict[str, float]:
    """What ``/metrics`` counts of S3 fetches (by outcome) and loads of the ``iris`` API."""
    found: dict[str, float] = {"loaded": 0.0}
    for family in text_string_to_metric_families(httpx.get(url + "/metrics").text):
        for sample in family.samples:
            if sample.name == "inferd_model_fetches_total" and sample.labels["scheme"] == "s3":
                found[sample.labels["outcome"]] = sample.value
            if sample.name == "inferd_model_loads_total" and sample.labels == {
                "model": "iris",
                "outcome": "ok",
            }:
                found["loaded"] = sample.value
    return found


def test_two_workers_download_a_model_once(files: FileServer, tmp_path: Path) -> None:
    files.files["/iris.onnx"] = Served(iris_bytes(tmp_path), delay=0.5)
    folder = cortex_project(tmp_path / "project", f"{files.url}/iris.onnx")
    data = tmp_path / "data"
    with serve(str(folder), "--workers", "2", "--data-dir", str(data)) as server:
        for _ in range(4):
            assert classify(server.http_url) == "iris-setosa"
    assert files.gets["/iris.onnx"] == 1
    assert len(entries(data)) == 1


def test_a_project_is_served_from_its_uri(bucket: Bucket, tmp_path: Path) -> None:
    """``inferd serve s3://bucket/project/``: the folder is fetched, its cortex.yaml and handlers
    read from the copy, its model fetched in turn."""
    model = bucket.put("exports/iris.onnx", iris_bytes(tmp_path))
    local = cortex_project(tmp_path / "project", model)
    for path in local.rglob("*"):
        if path.is_file():
            bucket.put(f"projects/iris/{path.relative_to(local)}", path.read_bytes())
    data = tmp_path / "data"
    with serve(f"s3://{bucket.name}/projects/iris/", "--data-dir", str(data)) as server:
        assert classify(server.http_url) == "iris-setosa"
    assert len(entries(data)) == 2  # the project and its model


def test_a_missing_model_stops_startup_naming_api_and_uri(bucket: Bucket, tmp_path: Path) -> None:
    uri = f"s3://{bucket.name}/exports/missing.onnx"
    data = tmp_path / "data"
    message = start_fails(cortex_project(tmp_path / "project", uri), data)
    assert f"error: api iris: cannot fetch {uri}" in message
    assert entries(data) == []


def test_an_inferd_yaml_names_its_code_in_s3(bucket: Bucket, tmp_path: Path) -> None:
    code = bucket.put("code/model.py", (ROOT / "examples" / "iris" / "model.py").read_bytes())
    project = tmp_path / "project"
    project.mkdir()
    (project / "inferd.yaml").write_text(f"target: {code}:Iris\nname: iris-s3\n")
    with serve(str(project), "--data-dir", str(tmp_path / "data")) as server:
        assert server.models == ["iris-s3"]
        answer = httpx.post(server.http_url + "/v2/models/iris-s3/infer", json=IRIS_V2, timeout=10)
        assert answer.status_code == 200, answer.text


def test_a_graph_nodes_code_is_fetched(bucket: Bucket, tmp_path: Path) -> None:
    uri = bucket.put("nodes/Doubler.py", (COMPONENTS / "Doubler.py").read_bytes())
    graph = tmp_path / "graph.yaml"
    graph.write_text(f"name: fetched\ngraph:\n  name: double\n  type: MODEL\n  target: {uri}:Doubler\n")
    with serve(str(graph), "--data-dir", str(tmp_path / "data")) as server:
        answer = httpx.post(server.http_url + "/api/v1.0/predictions", json={"data": {"ndarray": [[1, 2]]}})
        assert answer.status_code == 200, answer.text
        assert answer.json()["data"]["ndarray"] == [[2, 4]]


def test_a_graph_node_that_cannot_be_fetched_stops_startup_naming_it(bucket: Bucket, tmp_path: Path) -> None:
    uri = f"s3://{bucket.name}/nodes/Missing.py"
    graph = tmp_path / "graph.yaml"
    graph.write_text(f"name: missing\ngraph:\n  name: gone\n  type: MODEL\n  target: {uri}:Missing\n")
    message = start_fails(graph, tmp_path / "data")
    assert f"error: graph 'missing', node 'gone': cannot fetch {uri}" in message


def test_a_cortex_savedmodel_folder_in_s3_serves_unchanged(
    bucket: Bucket, tmp_path: Path, tf_models_dir: Path
) -> None:
    """A TensorFlow API whose ``model:`` is a SavedModel folder (two numbered versions) in S3: the
    folder is fetched whole and the highest version serves (version 1 gives wrong labels)."""
    for path in (tf_models_dir / "iris").rglob("*"):
        if path.is_file():
            bucket.put(f"tf/iris/{path.relative_to(tf_models_dir / 'iris')}", path.read_bytes())
    config = projects.TF["cortex.yaml"].split("        - kind: api\n          name: pair")[0]
    files = {**projects.TF, "cortex.yaml": config.replace("models/iris", f"s3://{bucket.name}/tf/iris/")}
    folder = projects.write(tmp_path / "project", files)
    data = tmp_path / "data"
    with serve(str(folder), "--data-dir", str(data)) as server:
        for sample, label in ((projects.SETOSA, "iris-setosa"), (projects.VIRGINICA, "iris-virginica")):
            answer = httpx.post(server.http_url + "/tf/iris", json=sample, timeout=30)
            assert answer.status_code == 200, answer.text
            assert answer.json()["label"] == label
    assert len(entries(data)) == 1


def test_a_file_uri_target_serves_the_folder_it_names(tmp_path: Path) -> None:
    """docs/storage.md accepts ``file://`` targets: ``inferd serve file:///abs/examples/iris`` serves
    the folder (the URI taken as a path lost a slash: ``no such file or directory: file:/abs/...``)."""
    uri = (ROOT / "examples" / "iris").as_uri()
    with serve(uri, "--data-dir", str(tmp_path / "data")) as server:
        answer = httpx.post(server.http_url + "/v2/models/iris/infer", json=IRIS_V2, timeout=10)
        assert answer.status_code == 200, answer.text
        assert answer.json()["model_name"] == "iris"
