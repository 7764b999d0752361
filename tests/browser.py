"""Headless Chromium for tests of pages that need a real browser (JavaScript UIs): Debian's ``chromium``
run once per page with ``--dump-dom``, after letting the page's scripts run for a virtual time budget.

Chromium only reaches 127.0.0.1 in the test environment, so pages under test must be self-contained.
`page` drives a tab over the Chrome DevTools protocol instead, for tests that fill forms and click.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import websocket

NAMES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


def chromium() -> str:
    """Chromium's executable ($CHROMIUM, else on PATH); a test that needs it fails without it, since
    skipping would hide the missing browser in CI."""
    wanted = os.environ.get("CHROMIUM")
    found = shutil.which(wanted) if wanted else next(filter(None, map(shutil.which, NAMES)), None)
    if not found:
        pytest.fail("headless Chromium is needed: apt-get install chromium (or set $CHROMIUM)")
    return found


def run(url: str, *flags: str, budget_ms: int = 10_000, timeout: float = 60) -> str:
    """Chromium's stdout for ``url`` with ``flags``; JavaScript runs for up to ``budget_ms`` of virtual
    time (fetches pause the clock, so the budget is an upper bound, not a wait)."""
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        command = [
            chromium(),
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={budget_ms}",
            *flags,
            url,
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        pytest.fail(f"chromium failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def dump_dom(url: str, *, budget_ms: int = 10_000) -> str:
    """The page's DOM, serialised after its scripts ran."""
    return run(url, "--dump-dom", budget_ms=budget_ms)


def screenshot(url: str, name: str, *, size: tuple[int, int] = (1280, 1600), budget_ms: int = 10_000) -> Path:
    """A PNG of the rendered page, kept as a test artifact under ``test-artifacts/``."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    path.unlink(missing_ok=True)
    run(url, f"--screenshot={path}", f"--window-size={size[0]},{size[1]}", budget_ms=budget_ms)
    if not path.is_file():
        pytest.fail(f"chromium wrote no screenshot to {path}")
    return path


# --- a page driven over the Chrome DevTools protocol ----------------------------------------------

DEVTOOLS = re.compile(r"DevTools listening on (ws://\S+)")


class Page:
    """One Chromium tab driven over the DevTools protocol: open a URL, fill fields, pick files, click,
    wait for what the page shows, and take screenshots kept under ``test-artifacts/``."""

    def __init__(self, socket: websocket.WebSocket) -> None:
        self.socket, self.next_id = socket, 0

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:  # events arrive between answers; only the answer is wanted
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    pytest.fail(f"{method} failed: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result

    def evaluate(self, expression: str) -> Any:
        found = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in found:
            pytest.fail(f"{expression!r} raised: {found['exceptionDetails']}")
        return found["result"].get("value")

    def wait_for(self, condition: str, timeout: float = 15.0) -> Any:
        """The value of the JavaScript ``condition`` once it is truthy."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(condition)
            if value:
                return value
            time.sleep(0.05)
        pytest.fail(f"waited {timeout}s for {condition!r}; the page shows:\n{self.text('body')}")

    def goto(self, url: str) -> None:
        self.send("Page.navigate", url=url)
        self.wait_for(f"location.href === {json.dumps(url)} && document.readyState === 'complete'")

    def text(self, selector: str) -> str:
        return str(self.evaluate(f"document.querySelector({json.dumps(selector)})?.innerText ?? ''"))

    def fill(self, selector: str, value: str) -> None:
        """Type ``value`` into a field, as a user would (the page sees an input event)."""
        self.evaluate(
            f"(() => {{ const field = document.querySelector({json.dumps(selector)}); field.value = "
            f"{json.dumps(value)}; field.dispatchEvent(new Event('input', {{bubbles: true}})); }})()"
        )

    def click(self, selector: str) -> None:
        self.evaluate(f"document.querySelector({json.dumps(selector)}).click()")

    def choose_files(self, selector: str, *paths: Path) -> None:
        root = self.send("DOM.getDocument")["root"]["nodeId"]
        node = self.send("DOM.querySelector", nodeId=root, selector=selector)["nodeId"]
        self.send("DOM.setFileInputFiles", nodeId=node, files=[str(path) for path in paths])

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / name
        shot = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


@contextmanager
def page(size: tuple[int, int] = (1280, 1000)) -> Iterator[Page]:
    """A fresh headless Chromium with one blank tab, closed (with every process it started) and its
    profile removed when the block ends."""
    profile = tempfile.mkdtemp(prefix="chromium-")
    command = [
        chromium(),
        *FLAGS,
        f"--user-data-dir={profile}",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        f"--window-size={size[0]},{size[1]}",
        "about:blank",
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        socket = websocket.create_connection(_page_socket(process), timeout=30, suppress_origin=True)
        try:
            tab = Page(socket)
            tab.send("Page.enable")
            yield tab
        finally:
            socket.close()
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the renderers and helpers too
        process.wait()
        assert process.stderr is not None
        process.stderr.close()
        _remove(Path(profile))


def _remove(folder: Path) -> None:
    """Remove ``folder``; helpers that were just killed may still be closing files in it."""
    for _ in range(50):
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            return
        time.sleep(0.1)
    pytest.fail(f"cannot remove chromium's profile {folder}")


def _page_socket(process: subprocess.Popen[str]) -> str:
    """The DevTools address of the blank tab, from the browser's own address on stderr."""
    assert process.stderr is not None
    for line in process.stderr:
        match = DEVTOOLS.search(line)
        if match:
            break
    else:
        pytest.fail(f"chromium exited ({process.wait()}) without a DevTools address")
    browser = match[1]
    host = browser.split("/")[2]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"http://{host}/json/list") as answer:
            tabs = json.load(answer)
        for tab in tabs:
            if tab.get("type") == "page":
                return str(tab["webSocketDebuggerUrl"])
        time.sleep(0.05)
    pytest.fail("chromium opened no tab")
