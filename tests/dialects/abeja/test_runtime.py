"""ABEJA 19.04+ request handlers over HTTP: the request object, response dict rules, errors, headers."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.dialects.abeja.conftest import PLATFORM_ENV, RUNTIME
from tests.servers import RunningServer, serve


def case(client: httpx.Client, name: str, **kwargs: object) -> httpx.Response:
    return client.post("/", json={"case": name}, **kwargs)  # type: ignore[arg-type]


def test_response_dict_sets_status_type_body_and_headers(runtime: httpx.Client) -> None:
    response = case(runtime, "status")
    assert response.status_code == 201
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-foo"] == "bar"
    # json.dumps with its default separators and ASCII escapes
    assert response.content == b'{"a": 1, "\\u00e9": "\\u00fc"}'
    assert response.headers["content-length"] == str(len(response.content))


def test_platform_headers(runtime: httpx.Client) -> None:
    response = case(runtime, "echo")
    assert response.headers["x-abeja-model-id"] == PLATFORM_ENV["ABEJA_MODEL_ID"]
    assert response.headers["x-abeja-model-version"] == "201906%E2%88%92model2"
    assert response.headers["x-abeja-deployment-id"] == PLATFORM_ENV["ABEJA_DEPLOYMENT_ID"]
    assert response.headers["x-abeja-service-id"] == PLATFORM_ENV["ABEJA_SERVICE_ID"]
    assert response.headers["x-abeja-sys-meta-proxy-version"]
    assert response.headers["x-abeja-sys-meta-runtime-version"]


@pytest.mark.parametrize(
    ("name", "content_type", "body"),
    [
        ("list", "text/plain", b"1\n2\n3"),  # a list is a sequence of JSON lines
        ("bytes", "text/plain", b"97\n98"),  # bare bytes iterate as ints
        ("raw", "application/octet-stream", b"ab"),  # bytes items are joined raw
        ("csv", "text/csv", b'a,b\r\n1,"x,y"\r\n3,4\r\n'),
        ("pairs", "application/json", b'{"b": 1, "a": 2}'),
        ("numpy", "application/json", b'{"array": [0, 1, 2], "float": 1.5, "day": "2019-06-01"}'),
        ("empty", "text/plain", b""),
    ],
)
def test_content_serialization_rules(
    runtime: httpx.Client, name: str, content_type: str, body: bytes
) -> None:
    response = case(runtime, name)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == content_type
    assert response.content == body


@pytest.mark.parametrize("name", ["not_a_dict", "raise"])
def test_handler_errors_are_500(runtime: httpx.Client, runtime_server: RunningServer, name: str) -> None:
    response = case(runtime, name)
    assert response.status_code == 500
    assert response.content == b'{"status":"unexpected error occurred"}'
    assert "unexpected error occurred in user model" in runtime_server.wait_for_log(
        "unexpected error occurred"
    )
    assert case(runtime, "echo").status_code == 200


def test_raw_body_reaches_the_handler(runtime: httpx.Client) -> None:
    response = runtime.post("/", content=b"\x00\x01raw", headers={"content-type": "application/octet-stream"})
    assert response.content == b"\x00\x01raw"


def test_get_passes_the_raw_query_string(runtime: httpx.Client) -> None:
    response = runtime.get("/any/path?a=1&b=%20x")
    assert response.status_code == 200
    assert response.json() == {"query": "a=1&b=%20x"}


def test_request_headers(runtime: httpx.Client) -> None:
    response = runtime.put(
        "/",
        json={"case": "headers"},
        headers=[("Accept", "text/html"), ("X-Multi", "1"), ("X-Multi", "2")],
    )
    answer = response.json()
    assert answer["accept"] == "text/html"
    assert answer["multi"] == ["1", "2"]
    assert answer["keys"] == sorted(answer["keys"])
    assert "host" not in answer["keys"] and "x-multi" in answer["keys"]
    assert answer["method"] == "PUT"
    assert answer["metadata"] is None
    assert answer["parts"] == 1


def test_multipart_parts(runtime: httpx.Client) -> None:
    files = {"image": ("cat.jpg", b"\xff\xd8jpeg", "image/jpeg")}
    response = runtime.post("/", data={"label": "cat"}, files=files)
    assert response.status_code == 200, response.text
    parts = {part["form_name"]: part for part in response.json()["parts"]}
    assert parts["label"]["body"] == "cat"
    assert parts["label"]["file_name"] is None
    assert parts["image"] == {
        "form_name": "image",
        "file_name": "cat.jpg",
        "content_type": "image/jpeg",
        "body": "\xff\xd8jpeg",
    }


def test_malformed_multipart_is_400(runtime: httpx.Client) -> None:
    response = runtime.post("/", content=b"garbage", headers={"content-type": "multipart/form-data"})
    assert response.status_code == 400
    assert "boundary" in response.json()["status"]


@pytest.mark.parametrize(
    ("method", "content_type", "shown"),
    [
        ("DELETE", "application/json", "application/json"),
        ("POST", None, ""),
        ("POST", "nonsense", "nonsense"),
    ],
)
def test_unsupported_method_or_content_type_is_501(
    runtime: httpx.Client, method: str, content_type: str | None, shown: str
) -> None:
    headers = {"content-type": content_type} if content_type else {}
    response = runtime.request(method, "/", content=b"{}", headers=headers)
    assert response.status_code == 501
    assert response.content == f'{{"status":"Content-Type: [{shown}] is not supported"}}'.encode()


def test_context_comes_from_the_environment(runtime: httpx.Client) -> None:
    assert case(runtime, "context").json() == {"mode": "service"}


def test_training_result_dir_is_absolute(runtime: httpx.Client) -> None:
    answer = case(runtime, "env").json()
    assert answer["cwd"] == str(RUNTIME)
    assert answer["result_dir"] == str(RUNTIME / "abejainc_training_result")


def test_requests_are_served_concurrently(runtime: httpx.Client) -> None:
    started = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: case(runtime, "sleep"), range(4)))
    elapsed = time.perf_counter() - started
    assert [answer.content for answer in answers] == [b"slept"] * 4
    assert elapsed < 2.5, f"four 1 s handlers took {elapsed:.1f} s"


def test_a_quick_handler_moves_from_threads_to_the_event_loop_and_back_when_slow() -> None:
    """Quick JSON calls end up on the loop (no thread hop); one slow call there sends the handler back
    to threads, after which a slow call no longer holds up other requests."""
    with (
        serve("main:handler", "--dialect", "abeja", cwd=RUNTIME, env=PLATFORM_ENV) as server,
        httpx.Client(base_url=server.http_url, timeout=30) as runtime,
    ):
        threads = [case(runtime, "thread").text for _ in range(200)]
        assert threads[0].startswith("abeja-handler"), "code of unknown speed starts in a thread"
        # Most calls ran on the loop (a call preempted past the budget goes back to threads a while).
        assert threads.count("MainThread") > 100, threads
        assert case(runtime, "sleep").content == b"slept"  # 1 s: sends the handler (back) to threads
        assert case(runtime, "thread").text.startswith("abeja-handler")
        _slow_call_does_not_block_health_checks(runtime)


def _slow_call_does_not_block_health_checks(runtime: httpx.Client) -> None:
    started = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        slow = pool.submit(case, runtime, "sleep")
        time.sleep(0.3)
        assert runtime.get("/health_check").status_code == 200
        assert time.perf_counter() - started < 0.9, "a handler back in its thread must not block the loop"
        assert slow.result().content == b"slept"


def test_health_check(runtime: httpx.Client) -> None:
    assert runtime.get("/health_check").json() == {"status": "ok"}


def test_access_log_lines_have_the_abeja_format(runtime: httpx.Client, runtime_server: RunningServer) -> None:
    case(runtime, "echo", headers={"x-request-id": "req-42"})
    log = runtime_server.wait_for_log('"request_id":"req-42"')
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    access = [
        line for line in lines if line.get("log_type") == "access_log" and line.get("request_id") == "req-42"
    ]
    assert access, runtime_server.log
    line = access[-1]
    assert line["http_method"] == "POST"
    assert line["http_status"] == 200
    assert line["log_level"] == "INFO"
    assert line["organization_id"] == PLATFORM_ENV["ABEJA_ORGANIZATION_ID"]
    assert line["service_id"] == PLATFORM_ENV["ABEJA_SERVICE_ID"]
    assert isinstance(line["elapsed_microsecs"], int)
    assert line["timestamp"][23] in "+-" and line["timestamp"][10] == "T"
    assert line["request_timestamp"] <= line["response_timestamp"]
