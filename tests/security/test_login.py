"""The try-it page behind ``--auth-token``: a browser signs in with a form and a cookie (never a token
in a URL), API clients keep their 401 JSON, and the cookie is neither the token nor usable from
another site's page."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests import browser
from tests.security.conftest import APPS, PYTHONPATH, TOKENS
from tests.servers import RunningServer, serve

PAGE = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
INFER = {"inputs": [{"name": "seconds", "shape": [1], "datatype": "FP32", "data": [0.0]}]}


@dataclass
class Site:
    server: RunningServer

    @property
    def cookie_name(self) -> str:
        return f"inferd_login_{self.server.http_url.rsplit(':', 1)[1]}"

    def browser(self) -> httpx.Client:
        return self.server.http(follow_redirects=False)

    def sign_in(self, http: httpx.Client, token: str, **more: str) -> httpx.Response:
        return http.post("/inferd/login", data={"token": token, **more}, headers=PAGE)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    env = {
        "PYTHONPATH": PYTHONPATH,
        "INFERD_AUTH_TOKENS": ",".join(TOKENS),
        "INFERD_ALLOWED_ORIGINS": "https://proxy.test",
    }
    with serve(
        str(APPS / "native_models.py"), "--dialect", "native", "--no-grpc", "--access-log", env=env
    ) as server:
        yield Site(server)


def test_a_browser_is_sent_to_the_form_and_api_clients_keep_their_401(site: Site) -> None:
    with site.browser() as http:
        for path in ("/", "/inferd/", "/inferd/models/sleepy"):
            sent = http.get(path, headers=PAGE)
            assert sent.status_code == 303, (path, sent.text)
            assert sent.headers["location"] == f"/inferd/login?next={path}"
        for path, headers in (("/inferd/api/models", {}), ("/inferd/", {"Accept": "application/json"})):
            refused = http.get(path, headers=headers)
            assert refused.status_code == 401
            assert "bearer token" in refused.json()["error"]
        form = http.get("/inferd/login", params={"next": "/inferd/models/sleepy"})
        assert form.status_code == 200
        assert '<input type="password" name="token"' in form.text
        assert 'name="next" value="/inferd/models/sleepy"' in form.text
        assert http.get("/inferd/static/inferd.css").status_code == 200  # the form's own style


def test_signing_in_sets_a_strict_http_only_cookie_that_is_not_the_token(site: Site) -> None:
    with site.browser() as http:
        signed = site.sign_in(http, TOKENS[1], next="/inferd/models/sleepy")
        assert signed.status_code == 303, signed.text
        assert signed.headers["location"] == "/inferd/models/sleepy"
        cookie = signed.headers["set-cookie"]
        attributes = [part.strip().lower() for part in cookie.split(";")]
        assert "httponly" in attributes and "samesite=strict" in attributes and "path=/" in attributes
        assert "secure" not in attributes  # plain http: a Secure cookie would never come back
        name, _, value = cookie.split(";")[0].partition("=")
        assert name == site.cookie_name
        assert TOKENS[1] not in cookie and len(value) == 64
        page = http.get("/inferd/", headers=PAGE)  # the client keeps the cookie, as a browser does
        assert page.status_code == 200 and "<html" in page.text
        assert http.get("/inferd/api/models").json()["models"][0]["name"] in ("boom", "sleepy")
        assert http.post("/v2/models/sleepy/infer", json=INFER).status_code == 200
        signed_out = http.post("/inferd/logout")
        assert signed_out.status_code == 303 and signed_out.headers["location"] == "/inferd/login"
        assert http.get("/inferd/api/models").status_code == 401


def test_a_wrong_token_gets_the_form_again(site: Site) -> None:
    with site.browser() as http:
        for token in ("wrong", "", f"{TOKENS[0]}x"):
            refused = site.sign_in(http, token)
            assert refused.status_code == 401
            assert "set-cookie" not in refused.headers
            assert "not one of this server" in refused.text and 'name="token"' in refused.text
        assert http.get("/inferd/api/models").status_code == 401


def test_a_forged_cookie_is_refused(site: Site) -> None:
    with site.browser() as http:
        for value in (TOKENS[0], "0" * 64, ""):
            http.cookies.set(site.cookie_name, value)
            assert http.get("/inferd/api/models").status_code == 401, value


def test_another_site_cannot_sign_a_browser_in(site: Site) -> None:
    """Login CSRF: a page elsewhere posting the form (with its own token) is refused by its Origin."""
    with site.browser() as http:
        answer = http.post("/inferd/login", data={"token": TOKENS[0]}, headers={"Origin": "http://evil.test"})
        assert answer.status_code == 403
        assert "set-cookie" not in answer.headers
        own = {"Origin": site.server.http_url}
        assert http.post("/inferd/login", data={"token": TOKENS[0]}, headers=own).status_code == 303


def test_a_form_posted_over_https_gets_a_secure_cookie(site: Site) -> None:
    """Behind a proxy terminating TLS, inferd sees http, but the form's page was https."""
    with site.browser() as http:
        signed = http.post(
            "/inferd/login", data={"token": TOKENS[0]}, headers={"Origin": "https://proxy.test"}
        )
        assert signed.status_code == 303, signed.text
        assert "secure" in [part.strip().lower() for part in signed.headers["set-cookie"].split(";")]


@pytest.mark.parametrize("target", ["//evil.test/", "https://evil.test/", "/\\evil.test", "relative"])
def test_signing_in_only_goes_back_to_this_server(site: Site, target: str) -> None:
    with site.browser() as http:
        assert site.sign_in(http, TOKENS[0], next=target).headers["location"] == "/inferd/"


def test_the_token_of_the_form_never_reaches_the_log(site: Site) -> None:
    with site.browser() as http:
        assert site.sign_in(http, TOKENS[0]).status_code == 303
    log = site.server.wait_for_log("/inferd/login")
    assert "/inferd/login" in log
    assert TOKENS[0] not in log


def test_a_real_browser_signs_in_and_sees_the_page(site: Site) -> None:
    """Chromium follows the redirect, posts the form (with its own Origin), keeps the cookie and
    sends it with the page's own requests."""
    with browser.page() as tab:
        tab.send("Page.navigate", url=f"{site.server.http_url}/inferd/")
        tab.wait_for("location.pathname === '/inferd/login' && document.readyState === 'complete'")
        assert tab.evaluate("document.cookie") == ""
        tab.fill("input[name=token]", "wrong")
        tab.click("button[type=submit]")
        tab.wait_for("document.querySelector('.error')?.innerText.includes('not one of')")
        tab.fill("input[name=token]", TOKENS[0])
        tab.click("button[type=submit]")
        tab.wait_for("location.pathname === '/inferd/' && !!document.querySelector('tr[data-model=sleepy]')")
        assert "ready" in tab.text("tr[data-model=sleepy]")
        assert tab.evaluate("document.cookie") == ""  # HttpOnly: the page's scripts cannot read it
