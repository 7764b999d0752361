"""The console in a real headless Chromium, over a real control process: a deployment with two
running services of one native version (answering ``x * 1`` and ``x * 2``) behind endpoint ``main`` at
100/0. The page lists them with their states and traffic, stops and starts a service, switches the
endpoint (a request through the gateway then answers from the second service), shows the API's own
error for weights that do not sum to 100 and for an endpoint switched meanwhile by someone else (and
the endpoint is unchanged), shows a hostile description
as text, and creates a deployment. Screenshots are kept under ``test-artifacts/``."""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests import browser
from tests.platform.console.conftest import project, push
from tests.platform.control import control
from tests.platform.test_control import Control, through, wait_state

XSS = '<img src=x onerror="window.hacked=1"><script>window.hacked=2</script> & "quotes"'


@dataclass
class Setup:
    running: Control
    services: list[str]

    @property
    def page(self) -> str:
        return self.running.api.removesuffix("/platform/v1") + "/console/"

    def open(self, tab: browser.Page, url: str) -> None:
        """``url`` in ``tab``, signed in first with the token the control process generated, as a
        user pastes the one its start printed (the console's default: no INFERD_AUTH_TOKENS)."""
        assert self.running.token
        tab.send("Page.navigate", url=self.page)
        tab.wait_for("!!document.querySelector('input[name=token]')")
        assert tab.evaluate("location.pathname") == "/console/login"
        tab.fill("input[name=token]", self.running.token)
        tab.click("button[type=submit]")
        tab.wait_for("location.pathname === '/console/' && document.readyState === 'complete'")
        tab.goto(url)

    def endpoint(self) -> dict[str, int]:
        [found] = self.running.call("GET", "/deployments/iris/endpoints").json()
        return {route["service_id"]: route["weight"] for route in found["routes"]}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("console")
    with control(root / "data") as running:
        created = running.call("POST", "/deployments", json={"name": "iris", "description": XSS})
        assert created.status_code == 201, created.text
        version = push(running, "iris", project(root / "scale"), "1.0")
        services = []
        for factor in ("1", "2"):
            body = {"version": version, "environment": {"FACTOR": factor}}
            answer = running.call("POST", "/deployments/iris/services", json=body)
            assert answer.status_code == 201, answer.text
            services.append(answer.json()["id"])
        for service in services:
            wait_state(running, service, "running")
        routes = [{"service": services[0], "weight": 100}, {"service": services[1], "weight": 0}]
        routed = running.call("PUT", "/deployments/iris/endpoints/main", json={"routes": routes})
        assert routed.status_code == 200, routed.text
        try:
            yield Setup(running, services)
        finally:  # services outlive their control process (the next one adopts them): stop them here
            stop_all(running)


def stop_all(running: Control, headers: dict[str, str] | None = None) -> None:
    for deployment in running.call("GET", "/deployments", headers=headers).json():
        name = deployment["name"]
        for endpoint in running.call("GET", f"/deployments/{name}/endpoints", headers=headers).json():
            running.call("DELETE", f"/endpoints/{endpoint['id']}", headers=headers)
        for service in running.call("GET", f"/deployments/{name}/services", headers=headers).json():
            stopped = running.call("POST", f"/services/{service['id']}/stop", headers=headers)
            assert stopped.status_code == 200, stopped.text


def row(service: str) -> str:
    return f"tr[data-service={service}]"


def state_of(service: str) -> str:
    return f"document.querySelector('{row(service)} [data-state]')?.dataset.state"


def test_the_page_lists_versions_services_endpoints_and_traffic(setup: Setup) -> None:
    first, second = setup.services
    assert through(setup.running) == 1.0  # one request, counted for the first service
    assert httpx.get(setup.page, timeout=30).status_code == 401  # the generated token is needed
    page = httpx.get(setup.page, headers=setup.running.headers, timeout=30)
    assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
    runs = setup.running.call("GET", "/deployments/iris/runs").status_code
    with browser.page() as tab:
        setup.open(tab, setup.page)
        tab.wait_for("!!document.querySelector('tr[data-deployment=iris] a')")
        tab.click("tr[data-deployment=iris] a")
        assert tab.wait_for(state_of(first)) == "running"
        assert tab.wait_for(state_of(second)) == "running"
        versions = tab.text("#versions tbody")
        assert "1.0" in versions and "sha256:" in versions and ("KiB" in versions or " B" in versions)
        services = tab.text("#services tbody")
        assert all(service in services for service in setup.services)
        # the traffic column: the request through the gateway, as the first service's metrics count it
        tab.wait_for(f"document.querySelector('{row(first)} .requests')?.innerText === '1 ok'")
        assert tab.text(f"{row(second)} .requests") == "0 ok"
        endpoint = "form[data-endpoint=main]"
        weights = tab.evaluate(
            f"[...document.querySelectorAll('{endpoint} input[data-service]')]"
            ".map((input) => [input.dataset.service, input.value])"
        )
        assert dict(weights) == {first: "100", second: "0"}
        gateway_port = setup.running.gateway.rsplit(":", 1)[1]
        assert tab.text(f"{endpoint} .gateway-url").endswith(f":{gateway_port}/e/main/")
        # the runs section is there exactly when the control API has runs
        assert tab.evaluate("document.querySelector('#runs-section').hidden") is (runs in (404, 405))
        # a description with markup is text: shown as it was written, nothing of it ran
        assert tab.text("tr[data-deployment=iris] .description") == XSS
        assert tab.text("#deployment-description") == XSS
        assert (
            tab.evaluate("document.querySelectorAll('#deployments img, #deployment img, main script').length")
            == 0
        )
        assert tab.evaluate("window.hacked === undefined")
        tab.screenshot("console-deployment.png")


def test_stop_start_and_weights_from_the_page(setup: Setup) -> None:
    first, second = setup.services
    endpoint = "form[data-endpoint=main]"
    with browser.page() as tab:
        setup.open(tab, setup.page + "#iris")
        assert tab.wait_for(state_of(second)) == "running"

        # the service no endpoint routes to stops; the API says so
        tab.click(f"{row(second)} button.stop")
        assert wait_state(setup.running, second, "stopped")["state"] == "stopped"
        assert tab.wait_for(state_of(second) + " === 'stopped'")
        # the routed one cannot be stopped: its button is disabled, saying why (the API refuses it too)
        assert tab.evaluate(f"document.querySelector('{row(first)} button.stop').disabled") is True
        assert "endpoint main" in tab.text(f"{row(first)} .stop-reason")
        refused = setup.running.call("POST", f"/services/{first}/stop")
        assert refused.status_code == 409 and "route the endpoint elsewhere" in refused.json()["error"]
        assert setup.running.call("GET", f"/services/{first}").json()["state"] == "running"
        # and the stopped one starts again
        tab.click(f"{row(second)} button.start")
        wait_state(setup.running, second, "running")
        assert tab.wait_for(state_of(second) + " === 'running'")

        # weights that do not sum to 100: the API's error, and nothing changed
        tab.fill(f"{endpoint} input[data-service={first}]", "60")
        tab.fill(f"{endpoint} input[data-service={second}]", "30")
        assert tab.text(f"{endpoint} .sum") == "sum: 90"
        tab.click(f"{endpoint} button.save")
        shown = tab.wait_for(f"document.querySelector('{endpoint} .error').innerText")
        body = {"routes": [{"service": first, "weight": 60}, {"service": second, "weight": 30}]}
        refused = setup.running.call("PUT", "/deployments/iris/endpoints/main", json=body)
        assert refused.status_code == 400 and shown == refused.json()["error"]
        assert setup.endpoint() == {first: 100, second: 0}
        assert through(setup.running) == 1.0
        tab.screenshot("console-bad-weights.png")

        # someone (a deploy) switches the endpoint while the page's weights are being edited: the page's
        # save is refused with the API's reason, nothing changes, and the form shows the new weights
        tab.fill(f"{endpoint} input[data-service={first}]", "0")
        tab.fill(f"{endpoint} input[data-service={second}]", "100")
        body = {"routes": [{"service": first, "weight": 50}, {"service": second, "weight": 50}]}
        assert setup.running.call("PUT", "/deployments/iris/endpoints/main", json=body).status_code == 200
        tab.click(f"{endpoint} button.save")
        shown = tab.wait_for(f"document.querySelector('{endpoint} .error')?.innerText")
        assert "has changed since it was read" in shown, shown
        assert setup.endpoint() == {first: 50, second: 50}
        assert tab.wait_for(f"document.querySelector('{endpoint} input[data-service={first}]').value") == "50"
        tab.screenshot("console-switched-meanwhile.png")

        # 0/100: the endpoint switches, and the gateway answers from the second service
        tab.fill(f"{endpoint} input[data-service={first}]", "0")
        tab.fill(f"{endpoint} input[data-service={second}]", "100")
        tab.click(f"{endpoint} button.save")
        tab.wait_for(
            f"document.querySelector('{endpoint} input[data-service={second}]')?.value === '100'"
            f" && !document.querySelector('{endpoint}').dataset.dirty"
        )
        assert tab.text(f"{endpoint} .error") == ""
        assert setup.endpoint() == {first: 0, second: 100}
        assert through(setup.running) == 2.0

        # the first service, no longer routed, stops from the page now
        tab.click(f"{row(first)} button.stop")
        assert wait_state(setup.running, first, "stopped")["state"] == "stopped"
        tab.wait_for(state_of(first) + " === 'stopped'")
        tab.screenshot("console-switched.png")


def test_create_a_deployment_from_the_page(setup: Setup) -> None:
    with browser.page() as tab:
        setup.open(tab, setup.page)
        tab.wait_for("!!document.querySelector('tr[data-deployment=iris]')")
        tab.fill("#new-name", "second")
        tab.fill("#new-description", "made <b>here</b>")
        tab.click("#create")
        tab.wait_for("document.querySelector('#deployment-name')?.innerText === 'second'")
        assert tab.text("#deployment-description") == "made <b>here</b>"
        created = setup.running.call("GET", "/deployments/second").json()
        assert created["description"] == "made <b>here</b>"
        tab.fill("#new-name", "second")  # taken: the API's 409, as it said it
        tab.click("#create")
        shown = tab.wait_for("document.querySelector('#create-error').innerText")
        clash = setup.running.call("POST", "/deployments", json={"name": "second"})
        assert clash.status_code == 409 and shown == clash.json()["error"]
        assert [d["name"] for d in setup.running.call("GET", "/deployments").json()].count("second") == 1
        assert setup.running.call("DELETE", "/deployments/second").status_code == 204


# --- with a token: the console's sign-in ---------------------------------------------------------------

TOKEN = "console-test-token"
BEARER = {"authorization": f"Bearer {TOKEN}"}


def test_with_a_token_the_console_signs_in_with_a_cookie(tmp_path: Path) -> None:
    with control(tmp_path / "data", env={"INFERD_AUTH_TOKENS": TOKEN}) as running:
        try:
            signing_in(running, tmp_path)
        finally:
            stop_all(running, BEARER)


def signing_in(running: Control, tmp_path: Path) -> None:
    bearer = BEARER
    created = running.call("POST", "/deployments", json={"name": "iris"}, headers=bearer)
    assert created.status_code == 201, created.text
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        tar.add(project(tmp_path / "scale"), arcname=".")
    files = {"archive": ("scale.tar.gz", archive.getvalue())}
    version = running.call(
        "POST", "/deployments/iris/versions", data={"label": "1"}, files=files, headers=bearer
    )
    assert version.status_code == 201, version.text
    body = {"version": version.json()["id"]}
    service = running.call("POST", "/deployments/iris/services", json=body, headers=bearer).json()["id"]
    deadline = time.monotonic() + 60
    while running.call("GET", f"/services/{service}", headers=bearer).json()["state"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    # the services want the token too: the console reads their metrics with it
    base = running.api.removesuffix("/platform/v1")
    traffic = httpx.get(f"{base}/console/api/deployments/iris/traffic", headers=bearer, timeout=30).json()
    assert traffic[service]["requests"] == {"ok": 0, "error": 0}, traffic
    with httpx.Client(base_url=base, timeout=30) as http:
        to_form = http.get("/console/", headers={"accept": "text/html"})
        assert to_form.status_code == 303 and to_form.headers["location"] == "/console/login?next=/console/"
        assert http.get("/console/static/inferd.css").status_code == 200  # the form's look
        assert http.get("/console/api/info").status_code == 401
        assert http.get("/platform/v1/deployments").status_code == 401
        wrong = http.post("/console/login", data={"token": "nope", "next": "/console/"})
        assert wrong.status_code == 401 and "login" not in "".join(wrong.headers.get_list("set-cookie"))
        signed = http.post("/console/login", data={"token": TOKEN, "next": "/console/"})
        assert signed.status_code == 303 and signed.headers["location"] == "/console/"
        cookie = signed.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and TOKEN not in cookie
        assert http.get("/platform/v1/deployments").json()[0]["name"] == "iris"
        # another site's page cannot change anything with the cookie
        foreign = http.post(
            "/platform/v1/deployments", json={"name": "x"}, headers={"origin": "http://evil.example"}
        )
        assert foreign.status_code == 403
    with browser.page() as tab:
        tab.send("Page.navigate", url=base + "/console/")
        tab.wait_for("!!document.querySelector('input[name=token]')")
        tab.fill("input[name=token]", TOKEN)
        tab.click("button[type=submit]")
        tab.wait_for("!!document.querySelector('tr[data-deployment=iris]')")
        assert tab.evaluate("location.pathname") == "/console/"
        assert tab.evaluate("document.cookie") == ""  # HttpOnly: no script reads it
        assert not tab.evaluate("document.querySelector('#sign-out').hidden")
        tab.fill("#new-name", "made-here")
        tab.click("#create")
        tab.wait_for("document.querySelector('#deployment-name')?.innerText === 'made-here'")
        tab.click("#sign-out button")
        tab.wait_for("!!document.querySelector('input[name=token]')")
    names = [d["name"] for d in running.call("GET", "/deployments", headers=bearer).json()]
    assert names == ["iris", "made-here"]
