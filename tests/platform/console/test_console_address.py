"""Where the console is (issue 43 item 6): the control process's ready line names it beside the API,
gateway and gRPC addresses, and the control port's ``/`` leads there, so a person who types the
address the ready line shows into a browser gets the console's sign-in, then the console. It was
found only deep in docs/platform.md, and ``/`` answered 404."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests import browser
from tests.platform.control import control

HTML = {"accept": "text/html"}


def test_the_ready_line_names_the_console_and_slash_leads_there(tmp_path: Path) -> None:
    with control(tmp_path / "data") as running:
        assert running.console == f"{running.base}/console/", running.console
        assert running.token  # the default: a generated token the console asks for

        # ``/`` needs no credentials to say where the console is, for a browser or curl alike
        for headers in (HTML, {}):
            moved = httpx.get(f"{running.base}/", headers=headers, timeout=30)
            assert moved.status_code == 303 and moved.headers["location"] == "/console/", moved.text
        # it opens nothing else: other methods on it still want the token
        assert httpx.post(f"{running.base}/", timeout=30).status_code == 401
        # the console still asks a browser to sign in, and answers with its page once it has
        login = httpx.get(running.console, headers=HTML, timeout=30)
        assert login.status_code == 303 and login.headers["location"].startswith("/console/login")
        page = httpx.get(running.console, headers={**HTML, **running.headers}, timeout=30)
        assert page.status_code == 200 and "<html" in page.text.lower()

        # in a browser: the address typed, the sign-in form shown, the console after it
        with browser.page() as tab:
            tab.send("Page.navigate", url=f"{running.base}/")
            tab.wait_for("!!document.querySelector('input[name=token]')")
            assert tab.evaluate("location.pathname") == "/console/login"
            tab.fill("input[name=token]", running.token)
            tab.click("button[type=submit]")
            tab.wait_for("location.pathname === '/console/' && document.readyState === 'complete'")
