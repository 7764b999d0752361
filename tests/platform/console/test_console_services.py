"""The console's pictures of services and endpoints, in a real headless Chromium over a real control
process (issue 43, "Pictures"): an hour of requests per second and p50/p99 latency per service and
endpoint as SVG charts (points every 0.5 s here, from the services' own /metrics and the gateway's
counter), a service's log that follows new lines, ``stop`` disabled with its reason on the service an
endpoint routes to, times in UTC throughout, and a link to try the model through the endpoint (the
try-it page, served by the service, reached through the gateway). Screenshots under test-artifacts/."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from inferd import __version__
from tests import browser
from tests.platform.console.conftest import push
from tests.platform.console.test_console import Setup, row, stop_all
from tests.platform.control import control, native_project
from tests.platform.test_control import through, wait_state

INTERVAL = 0.5


def project(folder: Path) -> Path:
    """A native model that logs a line per request (what the log panel shows arriving)."""
    return native_project(
        folder,
        "scale",
        """
            import sys

            import inferd

            class Scale(inferd.Model):
                def predict(self, inputs):
                    print("answering x =", inputs["x"], file=sys.stderr, flush=True)
                    return {"y": inputs["x"]}
        """,
    )


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("console-services")
    env = {"INFERD_CONSOLE_SAMPLE_INTERVAL": str(INTERVAL)}
    with control(root / "data", env=env) as running:
        created = running.call("POST", "/deployments", json={"name": "iris"})
        assert created.status_code == 201, created.text
        version = push(running, "iris", project(root / "scale"), "1.0")
        services = []
        for _ in range(2):
            answer = running.call("POST", "/deployments/iris/services", json={"version": version})
            assert answer.status_code == 201, answer.text
            services.append(answer.json()["id"])
        for service in services:
            wait_state(running, service, "running")
        routes = [{"service": services[0], "weight": 100}]
        routed = running.call("PUT", "/deployments/iris/endpoints/main", json={"routes": routes})
        assert routed.status_code == 200, routed.text
        try:
            yield Setup(running, services)
        finally:
            stop_all(running)


def history(setup: Setup) -> dict[str, object]:
    url = setup.running.api.removesuffix("/platform/v1") + "/console/api/deployments/iris/history"
    answer = httpx.get(url, headers=setup.running.headers, timeout=30)
    assert answer.status_code == 200, answer.text
    found: dict[str, object] = answer.json()
    return found


def busy_points(points: list[list[float | None]]) -> list[list[float | None]]:
    return [point for point in points if point[1] and point[2] is not None and point[3] is not None]


def test_traffic_is_kept_as_points_with_rates_and_quantiles(setup: Setup) -> None:
    first, second = setup.services
    started = time.time()
    deadline = time.monotonic() + 30
    while True:  # requests spread over a few intervals, until both charts have a busy point
        for _ in range(5):
            through(setup.running)
        found = history(setup)
        services, endpoints = found["services"], found["endpoints"]
        assert isinstance(services, dict) and isinstance(endpoints, dict)
        if busy_points(services[first]) and busy_points(endpoints["main"]):
            break
        assert time.monotonic() < deadline, found
        time.sleep(INTERVAL)
    assert found["interval"] == INTERVAL
    for point in busy_points(services[first]) + busy_points(endpoints["main"]):
        at, rps, p50, p99 = point
        assert started - 1 < at <= time.time()
        assert rps is not None and 0 < rps < 1000
        assert p50 is not None and p99 is not None and 0 <= p50 <= p99 < 10_000
    # the service no request reaches: points, all idle
    assert services[second] and all(p[1] == 0 and p[2] is None for p in services[second])


def test_the_page_draws_charts_and_follows_a_log(setup: Setup) -> None:
    first, second = setup.services
    for _ in range(5):
        through(setup.running)
    deadline = time.monotonic() + 30
    while not busy_points(history(setup)["services"][first]):  # type: ignore[index]
        assert time.monotonic() < deadline
        time.sleep(INTERVAL)
    with browser.page(size=(1280, 1600)) as tab:
        setup.open(tab, setup.page + "#iris")
        tab.wait_for(f"!!document.querySelector('{row(first)} button.stop')")

        # a chart per service and endpoint; the busy service's request line has drawn segments
        chart = f"[data-chart='service:{first}']"
        line = f"document.querySelector(\"{chart} path[data-series=rps]\")?.getAttribute('d')"
        tab.wait_for(f"({line} || '').includes('L')")
        for key in (f"service:{second}", "endpoint:main"):
            assert tab.evaluate(f"document.querySelectorAll(\"[data-chart='{key}'] svg.chart\").length") == 2
        assert tab.evaluate(f'document.querySelectorAll("{chart} [data-series=p99]").length') >= 1
        legend = tab.text(f"{chart} figure")
        assert "req/s" in legend
        assert "UTC" in tab.text(f"{chart} .times")

        # stop: disabled on the routed service, saying why; the other one's is not
        assert tab.evaluate(f"document.querySelector('{row(first)} button.stop').disabled") is True
        reason = tab.text(f"{row(first)} .stop-reason")
        assert "endpoint main" in reason and "route elsewhere first" in reason
        assert tab.evaluate(f"document.querySelector('{row(first)} button.stop').title") == reason
        assert tab.evaluate(f"document.querySelector('{row(second)} button.stop').disabled") is False

        # times in one zone: every time cell and the status line in UTC
        times = tab.evaluate(
            "[...document.querySelectorAll('#versions td, #deployments td')]"
            ".map((td) => td.innerText).filter((t) => /\\d\\d:\\d\\d:\\d\\d/.test(t))"
        )
        assert times and all(t.endswith(" UTC") for t in times), times
        assert "UTC" in tab.text("#status")
        assert tab.text("#server") == f"platform console · inferd {__version__}"

        # try it through the endpoint: the link leads to the gateway's /e/main/
        link = tab.evaluate("document.querySelector('form[data-endpoint=main] a.try-it').href")
        assert link == f"{setup.running.gateway}/e/main/inferd/"

        # the log: its last lines, then what the service logs next (a request's access line)
        tab.click(f"{row(first)} button.log")
        tab.wait_for("!document.querySelector('#service-log').hidden")
        tab.wait_for("document.querySelector('#service-log-lines').innerText.length > 20")
        before = tab.text("#service-log-lines").count("answering x")
        shot = tab.screenshot("console-services.png")
        assert shot.stat().st_size > 10_000
        for _ in range(3):
            through(setup.running)
        lines = "document.querySelector('#service-log-lines').innerText"
        tab.wait_for(f"{lines}.split('answering x').length - 1 > {before}")
        assert "UTC" in tab.text("#service-log-status")
        tab.click("#service-log-close")
        assert tab.wait_for("document.querySelector('#service-log').hidden")

        # the link: the service's try-it page through the gateway, its links and requests under /e/main/
        tab.goto(link)
        tab.wait_for("!!document.querySelector('tr[data-model=scale] a')")
        assert tab.evaluate("document.querySelector('tr[data-model=scale] a').pathname") == (
            "/e/main/inferd/models/scale"
        )
        tab.click("tr[data-model=scale] a")
        tab.wait_for("!!document.querySelector('#request')")  # no declared inputs: the whole request
        assert tab.evaluate("location.pathname") == "/e/main/inferd/models/scale"
        assert "the last request answered" in tab.text("#example-from")
        last = json.loads(tab.evaluate("document.querySelector('#request').value"))
        assert last["inputs"][0]["name"] == "x" and last["inputs"][0]["data"] == [1.0]
        request = {"inputs": [{"name": "x", "shape": [1], "datatype": "FP64", "data": [2.5]}]}
        tab.fill("#request", json.dumps(request))
        tab.click("#send")
        answer = tab.wait_for("document.querySelector('#answer-json')?.innerText")
        assert '"model_name": "scale"' in answer and "2.5" in answer
        assert (
            tab.evaluate("getComputedStyle(document.querySelector('header')).display") != "inline"
        )  # styled
        tab.screenshot("console-try-it-through-endpoint.png")


def test_quantiles_are_read_from_buckets_as_prometheus_does() -> None:
    """Linear within the bucket the rank falls in; past the last finite bound, that bound."""
    from inferd.platform.console.history import quantile

    buckets = {0.001: 0.0, 0.01: 50.0, 0.1: 100.0, float("inf"): 100.0}
    assert quantile(0.5, buckets) == pytest.approx(0.01)
    assert quantile(0.99, buckets) == pytest.approx(0.01 + 0.09 * 49 / 50)
    assert quantile(0.99, {0.1: 0.0, float("inf"): 10.0}) == pytest.approx(0.1)
    assert quantile(0.5, {0.1: 0.0, float("inf"): 0.0}) is None
