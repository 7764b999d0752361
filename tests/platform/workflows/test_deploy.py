"""``inferd deploy / get / logs / delete`` against a control process: a Cortex ONNX project (the
model built here) deployed, called through the gateway, updated under load with no failed request,
deployed again unchanged (nothing happens), deployed broken (the deploy fails with the reason, the
running version keeps serving), looked at, followed, deleted; and two deploys of one API at once (the
first to switch wins, the other leaves nothing behind)."""

from __future__ import annotations

import json
import subprocess
import textwrap
import threading
from pathlib import Path

import httpx
import pytest

from tests.dialects.cortex.projects import SETOSA, iris_onnx
from tests.platform.test_control import Control
from tests.platform.workflows.conftest import Load, verb, write
from tests.servers import ROOT, inferd_command

CORTEX_YAML = """
    - kind: api
      name: iris
      onnx:
        model: iris.onnx
        request_handler: handler.py
      compute: {cpu: 200m, mem: 1G}
"""
HANDLER = """
    LABELS = ["iris-setosa", "iris-versicolor", "iris-virginica"]
    KEYS = ["sepal_length", "sepal_width", "petal_length", "petal_width"]


    def pre_inference(sample, signature, metadata):
        return {signature[0].name: [sample[key] for key in KEYS]}


    def post_inference(prediction, signature, metadata):
        return {"label": LABELS[int(prediction[0][0])], "version": VERSION}
"""


def project(folder: Path, version: str, api: str = "iris") -> Path:
    handler = f"VERSION = {version!r}\n" + textwrap.dedent(HANDLER)
    write(folder, {"cortex.yaml": CORTEX_YAML.replace("name: iris", f"name: {api}"), "handler.py": handler})
    if not (folder / "iris.onnx").exists():
        iris_onnx(folder / "iris.onnx")
    return folder


def predict(gateway: str, http: httpx.Client | None = None) -> httpx.Response:
    return (http or httpx).post(f"{gateway}/e/iris/iris", json=SETOSA, timeout=30)  # type: ignore[attr-defined]


def deployed(platform: Control) -> tuple[list[dict], list[dict]]:
    versions = platform.call("GET", "/deployments/iris/versions").json()
    services = platform.call("GET", "/deployments/iris/services").json()
    return versions, services


def test_deploy_update_and_delete(platform: Control, tmp_path: Path) -> None:
    folder = project(tmp_path / "iris", "1")
    first = verb(platform, "deploy", str(folder))
    assert first.returncode == 0, first.stderr
    answer = predict(platform.gateway)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"label": "iris-setosa", "version": "1"}
    versions, services = deployed(platform)
    assert len(versions) == 1 and len(services) == 1
    # compute.cpu → threads of numerical libraries; mem has no mapping
    assert versions[0]["environment"]["OMP_NUM_THREADS"] == "1"
    assert versions[0]["dialect"] == "cortex" and services[0]["workers"] == 1

    again = verb(platform, "deploy", str(folder / "cortex.yaml"))
    assert again.returncode == 0 and "up to date" in again.stdout, again.stdout + again.stderr
    assert deployed(platform) == (versions, services)

    project(folder, "2")
    with Load(lambda http: predict(platform.gateway, http), lambda found: found["version"]) as load:
        load.wait_for(20)
        updated = verb(platform, "deploy", str(folder))
        load.wait_for(len(load.answers) + 20)
    assert updated.returncode == 0, updated.stderr
    assert load.failures == []
    assert "1" in load.answers and load.answers[-1] == "2"
    assert predict(platform.gateway).json()["version"] == "2"
    versions, services = deployed(platform)
    assert len(versions) == 2 and [s["state"] for s in services] == ["running"]

    (folder / "handler.py").write_text("import this_module_does_not_exist\n")
    broken = verb(platform, "deploy", str(folder), "--timeout", "120")
    assert broken.returncode == 1
    assert "failed to start" in broken.stderr and "this_module_does_not_exist" in broken.stderr, broken.stderr
    assert predict(platform.gateway).json()["version"] == "2"
    after_versions, after_services = deployed(platform)
    assert after_services == services and len(after_versions) == 3  # the failed service is gone

    got = verb(platform, "get", "iris", "--json")
    assert got.returncode == 0, got.stderr
    status = json.loads(got.stdout)
    assert status["status"] == "live" and status["replicas"] == "1/1"
    assert status["requests"] >= 20 and status["latency_ms"]["p50"] > 0
    listed = verb(platform, "get")
    assert "iris" in listed.stdout and "live" in listed.stdout

    logs = verb(platform, "logs", "iris", "--no-follow", "--lines", "50")
    assert logs.returncode == 0 and "inferd ready" in logs.stdout
    command = inferd_command("logs", "iris", "--url", platform.api.removesuffix("/platform/v1"))
    follower = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=platform.cli_env(), cwd=ROOT)
    try:
        assert follower.stdout is not None
        assert "inferd" in follower.stdout.readline()  # the last lines, then it waits for more
        assert follower.poll() is None
    finally:
        follower.terminate()
        follower.wait(10)
        if follower.stdout is not None:
            follower.stdout.close()

    deleted = verb(platform, "delete", "iris")
    assert deleted.returncode == 0, deleted.stderr
    assert predict(platform.gateway).status_code == 404
    assert platform.call("GET", "/deployments/iris").status_code == 404
    missing = verb(platform, "delete", "iris")
    assert missing.returncode == 1 and "no deployment" in missing.stderr


def test_two_deploys_at_once_one_switches_and_the_other_leaves_nothing(
    platform: Control, tmp_path: Path
) -> None:
    """Two roll-outs of one API that both read the endpoint before either switched it: the first to
    switch wins; the other's switch fails on its condition (If-Match), it removes the service it
    started and retires nothing, so the winner's service serves alone and none is left orphaned."""
    from inferd.platform.workflows.control import Control as ControlAPI
    from inferd.platform.workflows.cortex import cortex_layouts
    from inferd.platform.workflows.layout import WorkflowError
    from inferd.platform.workflows.rollout import roll_out

    assert verb(platform, "deploy", str(project(tmp_path / "v0", "0", api="race"))).returncode == 0
    both_started = threading.Barrier(2, timeout=120)
    outcomes: dict[str, object] = {}

    def deploy(version: str) -> None:
        def say(line: str) -> None:
            if line.endswith(" running"):  # both have read the endpoint and started their service
                both_started.wait()

        (layout,) = cortex_layouts(project(tmp_path / version, version, api="race"))
        with ControlAPI(platform.base, platform.token) as api:
            try:
                outcomes[version] = roll_out(api, layout, say=say)
            except WorkflowError as exc:
                outcomes[version] = exc

    threads = [threading.Thread(target=deploy, args=(version,)) for version in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)
    failed = [version for version, outcome in outcomes.items() if isinstance(outcome, WorkflowError)]
    assert len(outcomes) == 2 and len(failed) == 1, outcomes
    (winner,) = {"a", "b"} - set(failed)
    assert "changed since it was read" in str(outcomes[failed[0]]), outcomes[failed[0]]
    services = platform.call("GET", "/deployments/race/services").json()
    assert [service["id"] for service in services] == outcomes[winner].started  # type: ignore[attr-defined]
    (endpoint,) = platform.call("GET", "/deployments/race/endpoints").json()
    assert [route["service_id"] for route in endpoint["routes"]] == [services[0]["id"]]
    answer = httpx.post(f"{platform.gateway}/e/race/race", json=SETOSA, timeout=30)
    assert answer.json() == {"label": "iris-setosa", "version": winner}
    assert verb(platform, "delete", "race").returncode == 0


@pytest.mark.parametrize(
    ("api", "workers", "scaling", "environment"),
    [
        (
            {"compute": {"min_replicas": 3, "cpu": "1500m", "gpu": 0}},
            1,
            (3, 3, 1.0, 3),
            {"OMP_NUM_THREADS": "2"},
        ),
        (
            {
                "autoscaling": {
                    "min_replicas": 1,
                    "max_replicas": 4,
                    "init_replicas": 2,
                    "workers_per_replica": 2,
                }
            },
            2,
            (1, 4, 2.0, 2),
            {},
        ),
        (
            {"autoscaling": {"min_replicas": 0, "max_replicas": 200, "target_replica_concurrency": 8}},
            1,
            (1, 64, 8.0, 1),
            {},
        ),
        ({"compute": {"cpu": 2}}, 1, (1, 1, 1.0, 1), {"MKL_NUM_THREADS": "2"}),
    ],
)
def test_compute_and_autoscaling_map(
    api: dict, workers: int, scaling: tuple[int, int, float, int], environment: dict[str, str]
) -> None:
    from inferd.platform.records import Scaling
    from inferd.platform.workflows.cortex import environment_of, scaling_of, workers_of

    assert workers_of(api) == workers
    assert scaling_of(api) == Scaling(*scaling)
    found = environment_of(api)
    assert environment.items() <= found.items()
    assert ("CUDA_VISIBLE_DEVICES" in found) == (api.get("compute", {}).get("gpu") == 0)


@pytest.mark.parametrize(
    ("api", "said"),
    [
        ({"autoscaling": {"max_replicas": "many"}}, "max_replicas"),
        ({"autoscaling": {"target_replica_concurrency": -1}}, "target_replica_concurrency"),
    ],
)
def test_bad_autoscaling_fields_are_named(api: dict, said: str) -> None:
    from inferd.platform.workflows.cortex import scaling_of
    from inferd.platform.workflows.layout import WorkflowError

    with pytest.raises(WorkflowError, match=said):
        scaling_of(api)


def test_bad_cortex_yaml_fails_before_anything(platform: Control, tmp_path: Path) -> None:
    folder = write(tmp_path / "bad", {"cortex.yaml": "- kind: api\n  name: x\n"})
    bad = verb(platform, "deploy", str(folder))
    assert bad.returncode == 2 and "api x" in bad.stderr
    assert platform.call("GET", "/deployments/x").status_code == 404
