"""The try-it page's way in when the server needs a bearer token: a browser cannot add an
``Authorization`` header to a page it navigates to, and a token in the URL would reach logs and
history. So a small form at `LOGIN` takes the token once and answers a cookie the authentication
middleware accepts like the header (HTTP routes only; gRPC clients are no browsers).

The cookie is ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's page makes the
browser send it), ``Path=/``, and ``Secure`` when the form was posted over https (to inferd, or to a
proxy terminating TLS: the form's ``Origin`` is then https). Its value is not the
token but ``HMAC-SHA256(token, PURPOSE)``: a stolen cookie opens the HTTP routes of this server
only while that token is configured, and it cannot be used as a bearer token on gRPC or on other
services sharing the token. A per-process random key would be safer still, but each worker and
each Ray replica would then refuse the cookies of the others; the HMAC of the token is the same in
all of them, and removing the token from the settings ends every cookie made from it. The cookie's
name carries the port the browser used, so servers on one host's different ports (cookies ignore
ports) keep their logins apart.

Login and logout are control routes: the ``Origin`` check refuses them from other sites' pages.
The platform's console (`inferd.platform.console`) signs in the same way under its own prefix, with
its own ``purpose``: its cookie opens the control process only.
"""

from __future__ import annotations

import hmac
from html import escape
from urllib.parse import parse_qs, quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute
from starlette.types import Scope

from inferd.core.errors import PayloadTooLarge
from inferd.protocols.asgi import header
from inferd.protocols.control import ControlRoute
from inferd.protocols.status import error_headers
from inferd.server.auth import Tokens, signature
from inferd.server.origins import DEFAULT_PORTS
from inferd.server.ui.routes import PREFIX

LOGIN = f"{PREFIX}/login"
LOGOUT = f"{PREFIX}/logout"
STATIC = f"{PREFIX}/static/"
PURPOSE = b"inferd try-it page login, v1"
#: A form holding a token and a path is small; anything larger is not this form.
MAX_FORM_SIZE = 16 * 1024
PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>inferd: sign in</title>
  <link rel="stylesheet" href="{static}inferd.css">
</head>
<body>
  <header><a class="brand" href="{prefix}/">inferd</a></header>
  <main>
    <h1>Sign in</h1>
    <p>This server needs one of its bearer tokens (<code>--auth-token</code>).</p>{problem}
    <form method="post" action="{login}">
      <input type="hidden" name="next" value="{next}">
      <label>Token
        <input type="password" name="token" autocomplete="current-password" required autofocus></label>
      <button type="submit">Sign in</button>
    </form>
  </main>
</body>
</html>
"""


class Login:
    """The login cookie of one server: what it is called, whether a request carries a good one, and
    the page a browser is sent to without one."""

    def __init__(
        self,
        tokens: Tokens,
        ui_paths: tuple[str, ...] = (PREFIX,),
        prefix: str = PREFIX,
        purpose: bytes = PURPOSE,
    ) -> None:
        self.tokens, self.prefix, self.purpose = tokens, prefix, purpose
        #: The form, sign-out, and the static files the form's page needs (open without credentials).
        self.login_path, self.logout_path = f"{prefix}/login", f"{prefix}/logout"
        self.static = f"{prefix}/static/"
        self._values = [value.encode() for value in tokens.signatures(purpose)]
        self._ui_paths = ui_paths

    def cookie_name(self, scope: Scope) -> str:
        """``inferd_login_<port>``, the port of the ``Host`` the browser asked for."""
        host = header(scope, b"host") or ""
        _, colon, port = host.rpartition(":")
        if not colon or not port.isdigit() or host.endswith("]"):
            port = str(DEFAULT_PORTS.get(scope.get("scheme", "http"), 80))
        return f"inferd_login_{port}"

    def cookie_value(self, token: str) -> str:
        """The cookie of a token, once it is known to be a configured one."""
        return signature(token.encode(), self.purpose)

    def take_cookie(self, scope: Scope, cookies: list[bytes]) -> tuple[list[bytes], bool]:
        """The ``Cookie`` header values without the login cookie (model code never sees it), and
        whether it was a good one (compared with every token's in constant time)."""
        name = self.cookie_name(scope).encode()
        given: bytes | None = None
        kept: list[bytes] = []
        for value in cookies:
            others = []
            for pair in (part.strip() for part in value.split(b";")):
                cookie, _, content = pair.partition(b"=")
                if cookie.strip() == name:
                    given = content.strip()
                elif pair:
                    others.append(pair)
            if others:
                kept.append(b"; ".join(others))
        if given is None:
            return kept, False
        matched = False
        for signed in self._values:  # every value, always: no early exit to time
            matched |= hmac.compare_digest(given, signed)
        return kept, matched

    def is_open(self, method: str, path: str) -> bool:
        """The form itself, logout, and the page's static files need no credentials."""
        return path in (self.login_path, self.logout_path) or (
            method in ("GET", "HEAD") and path.startswith(self.static)
        )

    def page_for(self, scope: Scope) -> Response | None:
        """A 303 to the form for a browser asking for the try-it page; None for anything else (API
        clients keep their 401 JSON)."""
        path = scope["path"]
        if scope.get("method") not in ("GET", "HEAD") or "text/html" not in (header(scope, b"accept") or ""):
            return None
        if path not in self._ui_paths and not path.startswith(f"{self.prefix}/"):
            return None
        return RedirectResponse(f"{self.login_path}?next={quote(path)}", 303)


def routes(login: Login) -> list[BaseRoute]:
    """The form (GET), the sign-in (POST) and the sign-out (POST)."""

    async def form_or_sign_in(request: Request) -> Response:
        if request.method == "GET":
            return _page(login, _next(request.query_params.get("next"), login.prefix))
        body = await request.body()
        if len(body) > MAX_FORM_SIZE:
            raise PayloadTooLarge(f"the login form is larger than {MAX_FORM_SIZE} bytes")
        fields = parse_qs(body.decode("utf-8", "replace"))
        token = (fields.get("token") or [""])[0]
        target = _next((fields.get("next") or [""])[0], login.prefix)
        if not login.tokens.matches(token.encode()):
            client = request.client.host if request.client else None
            slowed = login.tokens.backoff.failed(client)  # counted as a wrong bearer token is
            if slowed is not None:
                await login.tokens.backoff.hold(client, slowed)
                answer = _page(login, target, slowed.message + ".", 429)
                answer.headers.update(error_headers(slowed))
                return answer
            return _page(login, target, "That token is not one of this server's.", 401)
        answer = RedirectResponse(target, 303)
        answer.set_cookie(
            login.cookie_name(request.scope),
            login.cookie_value(token),
            path="/",
            httponly=True,
            samesite="strict",
            secure=_over_https(request),
        )
        return answer

    async def sign_out(request: Request) -> Response:
        answer = RedirectResponse(login.login_path, 303)
        answer.delete_cookie(login.cookie_name(request.scope), path="/", httponly=True, samesite="strict")
        return answer

    return [
        ControlRoute(login.login_path, form_or_sign_in, methods=["GET", "POST"]),
        ControlRoute(login.logout_path, sign_out, methods=["POST"]),
    ]


def _over_https(request: Request) -> bool:
    """Whether the browser posted the form over https: to this server, or to a proxy terminating TLS
    in front of it (the form's page then has an https ``Origin``, which the Origin check allowed)."""
    return request.url.scheme == "https" or (request.headers.get("origin") or "").lower().startswith(
        "https://"
    )


def _next(path: str | None, prefix: str = PREFIX) -> str:
    """Where to go after signing in: a path of this server only (no ``//host``), else the page."""
    if not path or not path.startswith("/") or path.startswith("//") or "\\" in path:
        return f"{prefix}/"
    return path


def _page(login: Login, target: str, problem: str = "", status: int = 200) -> Response:
    shown = f'\n    <p class="error" role="alert">{escape(problem)}</p>' if problem else ""
    html = PAGE.format(
        static=login.static, prefix=login.prefix, login=login.login_path, next=escape(target), problem=shown
    )
    return HTMLResponse(html, status, headers={"Cache-Control": "no-store"})
