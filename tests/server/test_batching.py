"""Adaptive batching on a real server: turned on by option, per-model variable or settings file;
concurrent requests share calls and get their own rows back; overload is shed with 503."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.servers import ROOT, RunningServer, serve

MODELS = str(ROOT / "tests" / "models" / "batching.py")


def infer(server: RunningServer, model: str, value: float) -> httpx.Response:
    body = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [value, value]}]}
    with httpx.Client(base_url=server.http_url, timeout=30) as http:
        return http.post(f"/v2/models/{model}/infer", json=body)


def concurrently(server: RunningServer, model: str, count: int) -> list[httpx.Response]:
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda value: infer(server, model, value), range(count)))


def outputs(response: httpx.Response) -> dict[str, list[float]]:
    return {output["name"]: output["data"] for output in response.json()["outputs"]}


def check_batched(server: RunningServer, model: str = "rows") -> None:
    answers = concurrently(server, model, 16)
    assert all(answer.status_code == 200 for answer in answers), [a.text for a in answers]
    for value, answer in enumerate(answers):
        assert outputs(answer)["y"] == [2.0 * value, 2.0 * value]  # each request gets its own rows back
    assert max(outputs(answer)["rows"][0] for answer in answers) > 1


def test_batching_on_from_the_command_line() -> None:
    with serve(MODELS, "--max-batch-size", "16", "--max-batch-time-ms", "100", "--no-grpc") as server:
        check_batched(server)


def test_batching_per_model_from_the_environment() -> None:
    env = {"INFERD_MODELS__ROWS__MAX_BATCH_SIZE": "16", "INFERD_MODELS__ROWS__MAX_BATCH_TIME_MS": "100"}
    with serve(MODELS, "--no-grpc", env=env) as server:
        check_batched(server)
        answer = infer(server, "slow", 1)
        assert answer.status_code == 200


def test_batching_per_model_from_a_settings_file(tmp_path: Path) -> None:
    settings = tmp_path / "model-settings.yaml"
    settings.write_text("rows:\n  max_batch_size: 16\n  max_batch_time_ms: 100\n")
    with serve(MODELS, "--model-settings", str(settings), "--no-grpc") as server:
        check_batched(server)


def test_batching_off_by_default() -> None:
    with serve(MODELS, "--no-grpc") as server:
        answers = concurrently(server, "rows", 8)
        assert {outputs(answer)["rows"][0] for answer in answers} == {1}


def test_overload_is_shed_with_503_and_retry_after() -> None:
    env = {"INFERD_MODELS__SLOW__MAX_BATCH_SIZE": "2", "INFERD_MODELS__SLOW__MAX_QUEUE_SIZE": "2"}
    with serve(MODELS, "--no-grpc", env=env) as server:
        answers = concurrently(server, "slow", 12)
        shed = [answer for answer in answers if answer.status_code == 503]
        assert shed, [answer.status_code for answer in answers]
        assert all(answer.headers["retry-after"] == "1" for answer in shed)
        assert "waiting; retry later" in shed[0].json()["error"]
        assert any(answer.status_code == 200 for answer in answers)
        assert infer(server, "slow", 1).status_code == 200


@pytest.mark.parametrize("content", ["[1, 2]", "rows: {max_batch_size: 0}", "rows: {unknown: 1}"])
def test_a_bad_settings_file_stops_startup(tmp_path: Path, content: str) -> None:
    import subprocess

    from tests.servers import inferd_command

    settings = tmp_path / "bad.yaml"
    settings.write_text(content)
    done = subprocess.run(
        inferd_command("serve", MODELS, "--model-settings", str(settings), "--port", "0", "--no-grpc"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert str(settings) in done.stderr
