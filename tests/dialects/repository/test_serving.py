"""``inferd serve --repository`` end to end, on real servers: models of three dialects side by side,
versions on V2's version routes, MLServer's settings file, polling (added, changed and removed
folders, with another model answering throughout), the repository API, models loaded on demand, and
start-up errors naming the model and its folder."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest
import tritonclient.http as httpclient

from tests.dialects.repository.conftest import (
    CORTEX_ADDER,
    SELDON_ECHO,
    answer,
    cortex_folder,
    mlserver_settings,
    native,
    write,
    x_request,
    y_of,
)
from tests.servers import RunningServer, inferd_command, serve, served


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory, adder_onnx: Path) -> Path:
    root = tmp_path_factory.mktemp("repository")
    write(root / "doubler", {"model.py": native(2.0)})
    write(root / "tripler", {"inferd.yaml": "dialect: seldon\ntarget: Tripler\n", "Tripler.py": SELDON_ECHO})
    cortex_folder(root / "adder-project", adder_onnx)
    write(
        root / "scorer",
        {
            "inferd.yaml": "versions: {latest: 2}\n",
            **{f"{version}/model.py": native(float(version)) for version in (1, 2, 3)},
        },
    )
    write(
        root / "from-mlserver",
        {
            "model-settings.json": mlserver_settings(
                name="mls", implementation="code.Scaler", parameters={"version": "v7"}, platform="x"
            ),
            "code.py": native(5.0),
        },
    )
    return root


repository_server = served(lambda repository: serve(f"--repository={repository}"), scope="module")


def test_models_of_every_dialect_are_served_side_by_side(repository_server: RunningServer) -> None:
    url = repository_server.http_url
    assert sorted(repository_server.models) == ["adder", "doubler", "mls", "scorer", "tripler"]
    assert y_of(url, "doubler", 1.0, 2.0) == [2.0, 4.0]
    tripled = answer(url, "tripler", x_request(1.0, 2.0))
    assert tripled.status_code == 200, tripled.text
    assert tripled.json()["outputs"][0]["data"] == [3.0, 6.0]
    client = httpclient.InferenceServerClient(repository_server.http_address)
    tensors = []
    for name in ("a", "b"):
        tensor = httpclient.InferInput(name, [1, 2], "FP32")
        tensor.set_data_from_numpy(np.array([[1.0, 2.0]], dtype=np.float32))
        tensors.append(tensor)
    assert client.infer("adder", tensors).as_numpy("sum").tolist() == [[2.0, 4.0]]
    client.close()


def test_the_versions_a_policy_serves_answer_on_their_routes(repository_server: RunningServer) -> None:
    url = repository_server.http_url
    assert y_of(url, "scorer/versions/2", 1.0) == [2.0]
    assert y_of(url, "scorer/versions/3", 1.0) == [3.0]
    assert answer(url, "scorer/versions/1", x_request(1.0)).status_code == 404  # latest 2: not served
    latest = answer(url, "scorer", x_request(1.0))
    assert latest.json()["model_version"] == "3" and latest.json()["outputs"][0]["data"] == [3.0]
    client = httpclient.InferenceServerClient(repository_server.http_address)
    assert client.is_model_ready("scorer", "2") and not client.is_model_ready("scorer", "1")
    client.close()


def test_mlservers_settings_give_name_version_and_implementation(repository_server: RunningServer) -> None:
    response = answer(repository_server.http_url, "mls", x_request(2.0))
    assert response.json()["model_version"] == "v7" and response.json()["outputs"][0]["data"] == [10.0]
    assert "have no meaning to inferd and are ignored" in repository_server.log


def test_a_repository_has_no_routes_of_its_models_dialects(repository_server: RunningServer) -> None:
    with repository_server.http() as http:
        assert http.post("/api/v1.0/predictions", json={"data": {"ndarray": [[1.0]]}}).status_code == 404


def wait_for(check: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the repository's change was not served in time"
        time.sleep(0.1)


class Traffic:
    """Requests to one model from a thread, counting every answer that is not 200."""

    def __init__(self, url: str, model: str) -> None:
        self.url, self.model = url, model
        self.sent = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Traffic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        with httpx.Client(timeout=10) as http:
            while not self._stop.is_set():
                try:
                    response = http.post(f"{self.url}/v2/models/{self.model}/infer", json=x_request(1.0))
                    if response.status_code != 200:
                        self.failures.append(response.text)
                except httpx.HTTPError as exc:
                    self.failures.append(repr(exc))
                self.sent += 1


def status(url: str, model: str) -> int:
    return answer(url, model, x_request(1.0)).status_code


def test_a_polled_repository_serves_its_changes_while_others_keep_answering(tmp_path: Path) -> None:
    root = tmp_path / "models"
    write(root / "steady", {"model.py": native(1.0)})
    write(root / "changing", {"model.py": native(2.0)})
    with serve(f"--repository={root}", "--repository-poll", "0.5") as server:
        url = server.http_url
        with Traffic(url, "steady") as traffic:
            write(root / "added", {"model.py": native(7.0)})
            wait_for(lambda: status(url, "added") == 200)
            assert y_of(url, "added", 1.0) == [7.0]

            write(root / "changing", {"model.py": native(4.0, cls="Other")})
            wait_for(lambda: y_of(url, "changing", 1.0) == [4.0])

            write(root / "broken", {"inferd.yaml": "a: [b"})
            server.wait_for_log("model 'broken' in", timeout=10)
            assert y_of(url, "changing", 1.0) == [4.0]

            write(root / "changing", {"model.py": "raise RuntimeError('half written')\n"})
            server.wait_for_log("half written", timeout=10)
            assert y_of(url, "changing", 1.0) == [4.0]  # a change that fails leaves the old one serving

            shutil.rmtree(root / "added")
            wait_for(lambda: status(url, "added") == 404)
        assert traffic.sent > 10 and traffic.failures == []
    assert "model 'broken' in" in server.log and str(root / "broken") in server.log


def test_without_polling_the_repository_api_loads_and_unloads(tmp_path: Path) -> None:
    root = tmp_path / "models"
    write(root / "first", {"model.py": native(1.0)})
    with serve(f"--repository={root}") as server:
        url = server.http_url
        write(root / "later", {"model.py": native(3.0)})
        time.sleep(0.5)
        assert status(url, "later") == 404  # not polled
        client = httpclient.InferenceServerClient(server.http_address)
        client.load_model("later")
        assert y_of(url, "later", 1.0) == [3.0]
        client.unload_model("later")
        assert status(url, "later") == 503
        with pytest.raises(Exception, match="model 'nope' is not in the model repository"):
            client.load_model("nope")
        write(root / "bad", {"inferd.yaml": "colour: red\n", "model.py": native(1.0)})
        with pytest.raises(Exception, match="unknown settings"):
            client.load_model("bad")
        assert y_of(url, "first", 1.0) == [1.0]
        client.close()


def loaded(url: str) -> set[str]:
    """The models the server has loaded now (V2 repository index)."""
    index = httpx.post(f"{url}/v2/repository/index", timeout=10).json()
    return {entry["name"] for entry in index if entry["state"] == "READY"}


def test_at_most_n_models_are_loaded_the_least_recently_used_unloaded(tmp_path: Path) -> None:
    root = tmp_path / "models"
    for name, factor in (("a", 1.0), ("b", 2.0), ("c", 3.0)):
        write(root / name, {"model.py": native(factor)})
    with serve(f"--repository={root}", "--max-loaded-models", "2") as server:
        url = server.http_url
        assert loaded(url) == set()
        assert y_of(url, "a", 1.0) == [1.0] and y_of(url, "b", 1.0) == [2.0]
        assert loaded(url) == {"a", "b"}
        assert y_of(url, "a", 1.0) == [1.0]
        assert y_of(url, "c", 1.0) == [3.0]
        assert loaded(url) == {"a", "c"}


def waits_for(go: Path) -> str:
    """A native model whose calls answer ``y = x`` once the file ``go`` exists."""
    return textwrap.dedent(f"""
        import asyncio
        from pathlib import Path

        import inferd

        class Waiter(inferd.Model):
            async def predict(self, inputs):
                while not Path({str(go)!r}).exists():
                    await asyncio.sleep(0.01)
                return {{"y": inputs["x"]}}
    """)


def test_a_model_with_a_call_inside_it_is_not_unloaded_to_make_room(tmp_path: Path) -> None:
    root, go = tmp_path / "models", tmp_path / "go"
    write(root / "busy", {"model.py": waits_for(go)})
    for name, factor in (("a", 1.0), ("b", 2.0)):
        write(root / name, {"model.py": native(factor)})
    with serve(f"--repository={root}", "--max-loaded-models", "2") as server, ThreadPoolExecutor(1) as pool:
        url = server.http_url
        busy = pool.submit(y_of, url, "busy", 5.0)
        while "busy" not in loaded(url):  # loaded, and its call inside it
            time.sleep(0.02)
        assert y_of(url, "a", 1.0) == [1.0]
        # busy is the least recently used, but its call is still inside it: a makes room for b
        assert y_of(url, "b", 1.0) == [2.0]
        assert loaded(url) == {"busy", "b"}
        go.touch()
        assert busy.result(timeout=30) == [5.0]


def logs_its_loads(log: Path, factor: float) -> str:
    """A native model answering ``y = x * factor`` whose load takes half a second; its loads
    (begun and done) and unloads are appended to ``log`` as lines "load NAME", "loaded NAME",
    "unload NAME"."""
    return textwrap.dedent(f"""
        import os
        import time

        import inferd

        def note(what, name):
            fd = os.open({str(log)!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                os.write(fd, f"{{what}} {{name}}\\n".encode())
            finally:
                os.close(fd)

        class Logged(inferd.Model):
            def load(self):
                note("load", self.name)
                time.sleep(0.5)
                note("loaded", self.name)

            def unload(self):
                note("unload", self.name)

            def predict(self, inputs):
                return {{"y": inputs["x"] * {factor}}}
    """)


def test_distinct_models_load_side_by_side_within_the_limit(tmp_path: Path) -> None:
    root, log = tmp_path / "models", tmp_path / "loads.log"
    names = [f"m{index}" for index in range(6)]
    for index, name in enumerate(names):
        write(root / name, {"model.py": logs_its_loads(log, float(index))})
    with serve(f"--repository={root}", "--max-loaded-models", "3") as server, ThreadPoolExecutor(12) as pool:
        calls = [pool.submit(y_of, server.http_url, name, 1.0) for name in names * 2]
        assert [call.result(timeout=60) for call in calls] == [[float(index)] for index in range(6)] * 2
    held, loading, most_held, most_loading = set(), set(), 0, 0
    for what, name in (line.split() for line in log.read_text().splitlines()):
        if what == "load":
            held.add(name)
            loading.add(name)
        elif what == "loaded":
            loading.discard(name)
        else:
            held.discard(name)
        most_held, most_loading = max(most_held, len(held)), max(most_loading, len(loading))
    assert most_held == 3  # loaded or loading at once: never more than the limit
    assert most_loading > 1  # loads of distinct models ran side by side
    assert sorted({line.split()[1] for line in log.read_text().splitlines()}) == names


def start_fails(*args: str) -> str:
    command = inferd_command("serve", *args, "--port", "0", "--grpc-port", "0")
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    message = " ".join(done.stderr.split())
    assert done.returncode == 1, message
    return message


@pytest.mark.parametrize(
    ("folders", "expected"),
    [
        (
            {
                "a": {"model.py": native(1.0), "inferd.yaml": "name: twin\n"},
                "b": {"model.py": native(2.0), "inferd.yaml": "name: twin\n"},
            },
            "model 'twin' is given by 2 folders",
        ),
        (
            {"broken": {"inferd.yaml": "dialect: [native\n"}},
            "model 'broken' in {root}/broken: inferd.yaml is not readable YAML",
        ),
        (
            {
                "sk": {
                    "model-settings.json": mlserver_settings(
                        name="sk", implementation="mlserver_huggingface.HuggingFaceRuntime"
                    )
                }
            },
            "model 'sk' in {root}/sk: implementation 'mlserver_huggingface.HuggingFaceRuntime' is an "
            "MLServer runtime",
        ),
    ],
    ids=["two-models-one-name", "broken-yaml", "mlserver-runtime"],
)
def test_a_folder_that_cannot_be_served_stops_start_up_naming_model_and_folder(
    tmp_path: Path, folders: dict[str, dict[str, str]], expected: str
) -> None:
    root = tmp_path / "models"
    write(root / "fine", {"model.py": native(1.0)})
    for name, files in folders.items():
        write(root / name, files)
    assert expected.format(root=root) in start_fails("--repository", str(root))


def test_a_missing_repository_or_unknown_scheme_stops_start_up_naming_it(tmp_path: Path) -> None:
    assert f"model repository {tmp_path / 'nowhere'}: no such folder" in start_fails(
        "--repository", str(tmp_path / "nowhere")
    )
    message = start_fails("--repository", "ftp://host/models/", "--data-dir", str(tmp_path / "data"))
    assert "cannot fetch ftp://host/models/: unknown scheme 'ftp://'" in message


def test_a_corrupt_model_file_is_refused_naming_model_and_folder_and_the_rest_serve(tmp_path: Path) -> None:
    """At start-up a corrupt ONNX file stops the server naming its model and folder; added under a
    poll, it is logged the same way and the models already served keep answering."""
    root = tmp_path / "models"
    write(root / "fine", {"model.py": native(1.0)})
    corrupt = {"cortex.yaml": CORTEX_ADDER, "adder.onnx": b"\x08\x01 this is not a protobuf"}
    write(root / "adder", corrupt)
    message = start_fails("--repository", str(root))
    assert "adder" in message and str(root / "adder") in message
    shutil.rmtree(root / "adder")
    with serve(f"--repository={root}", "--repository-poll", "0.3") as server:
        write(root / "adder", corrupt)
        server.wait_for_log(str(root / "adder"), timeout=15)
        assert y_of(server.http_url, "fine", 2.0) == [2.0]
        assert status(server.http_url, "adder") in (404, 503)
