"""Limits with clear answers on every dialect: a request timeout (504, the server keeps serving), one
request at a time with one waiting (503 + Retry-After), upload count and size (413), and model
failures whose 5xx bodies carry no traceback and no path; uploads leave no temp files behind."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.security.conftest import MAX_UPLOAD_SIZE, TIMEOUT, Secured, bearer

UPLOADERS = ["seldon", "deepaas", "abeja"]


def test_a_slow_request_times_out_and_the_server_keeps_serving(secured: Secured) -> None:
    with secured.client(bearer()) as http:
        started = time.monotonic()
        answer = secured.ask(http, seconds=TIMEOUT + 2)
        took = time.monotonic() - started
        assert answer.status_code == 504, answer.text
        assert TIMEOUT - 0.1 < took < TIMEOUT + 1.5
        assert "timeout" in answer.text
        assert http.get(secured.health).status_code == 200
        assert secured.ask(http, seconds=0).status_code == 200  # while the slow call still sleeps


def test_requests_beyond_the_limit_and_the_queue_are_shed(secured: Secured) -> None:
    """One slow request runs, a quick one waits for its turn (and gets it within the timeout), and a
    third, arriving while both are there, is shed."""

    def call(delay_and_seconds: tuple[float, float]) -> httpx.Response:
        delay, seconds = delay_and_seconds
        time.sleep(delay)
        with secured.client(bearer()) as http:
            return secured.ask(http, seconds=seconds)

    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(call, ((0.0, 1.5), (0.4, 0.0), (0.8, 0.0))))
    statuses = [answer.status_code for answer in answers]
    assert statuses == [200, 200, 503], [answer.text for answer in answers]
    shed = answers[2]
    assert int(shed.headers["retry-after"]) >= 1
    assert "busy" in shed.text


def test_model_failures_carry_no_traceback_and_no_path(secured: Secured) -> None:
    with secured.client(bearer()) as http:
        answer = secured.ask(http, boom=True)
    assert answer.status_code >= 400
    for internal in ("/srv/models", "Traceback", 'File "'):
        assert internal not in answer.text
    assert secured.server.wait_for_log("/srv/models/weights.bin")  # the log keeps the details


@pytest.mark.parametrize("secured", UPLOADERS, indirect=True)
def test_too_many_uploaded_files_are_refused(secured: Secured) -> None:
    files = [("binData" if secured.dialect == "seldon" else "data", (f"f{i}.txt", b"x")) for i in range(3)]
    with secured.client(bearer()) as http:
        answer = secured.ask(http, files=files)
    assert answer.status_code == 413, answer.text
    assert "more than 2 files" in answer.text
    assert list(secured.temp.iterdir()) == []


@pytest.mark.parametrize("secured", UPLOADERS, indirect=True)
def test_an_uploaded_file_over_the_size_limit_is_refused(secured: Secured) -> None:
    field = "binData" if secured.dialect == "seldon" else "data"
    with secured.client(bearer()) as http:
        answer = secured.ask(http, files={field: ("big.bin", b"x" * (MAX_UPLOAD_SIZE + 1))})
    assert answer.status_code == 413, answer.text
    assert f"limit of {MAX_UPLOAD_SIZE} bytes" in answer.text
    assert list(secured.temp.iterdir()) == []


@pytest.mark.parametrize("secured", ["deepaas", "abeja"], indirect=True)
def test_uploaded_file_names_are_made_safe(secured: Secured) -> None:
    with secured.client(bearer()) as http:
        answer = secured.ask(http, files={"data": ("../../etc/evil.txt", b"hello")})
        failed = secured.ask(http, boom=True, files={"data": ("x.txt", b"hello")})
    assert answer.status_code == 200, answer.text
    assert failed.status_code >= 500
    body = answer.json()
    if secured.dialect == "deepaas":
        seen = body["predictions"]
        assert seen["original_filename"] == "evil.txt"
        assert seen["in_temp_dir"] and seen["temp_name"].endswith(".txt")
    else:
        assert body["files"] == ["evil.txt"]
    assert list(secured.temp.iterdir()) == []  # the copies are gone, after success and failure


def test_concurrent_traffic_during_a_timeout_stays_answered(secured: Secured) -> None:
    """A request that times out holds up nobody else: probes are answered while it runs."""

    def slow_call() -> None:
        with secured.client(bearer()) as http:
            secured.ask(http, seconds=TIMEOUT + 1)

    slow = threading.Thread(target=slow_call)
    slow.start()
    try:
        time.sleep(0.3)
        with secured.client() as http:
            started = time.monotonic()
            assert http.get(secured.health).status_code == 200
            assert time.monotonic() - started < 1.0
    finally:
        slow.join()
