"""Shortcuts to the hot routes: V2 infer, ABEJA's ``/``, a graph's predictions, Seldon's ``/predict``.

Starlette tries routes in order, one regular expression each. A dialect's routes sit behind the V2
table, the metrics and the page, so a request to a dialect's route paid a score of failed matches
before its own, which cost more than a small handler. `IndexedRouter` finds a fixed path's route with
one dict lookup, when no earlier route could match that path (checked once, when the app is built),
and otherwise scans as Starlette does, so the answer is always the same.

`DirectRoutes` goes one step further for routes whose endpoint is a bare ASGI app (see
`inferd.protocols.asgi`): the fixed ones, and those the router tries first (V2 infer). As the
innermost middleware, it calls them before Starlette's exception middleware and router, which wrap
every request in a `Request` and two more closures. It answers the errors it knows with the app's
own handlers and lets any other reach the server error middleware, so a request gets the same answer
either way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route, Router
from starlette.types import ASGIApp, Receive, Scope, Send

ExceptionHandler = Callable[[Request, Exception], Awaitable[Response]]


class IndexedRouter(Router):
    def __init__(self, routes: Sequence[BaseRoute], **options: Any) -> None:
        super().__init__(list(routes), **options)
        self.fixed = fixed_routes(self.routes)

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path"):
            route = self.fixed.get(scope["path"])
            if route is not None:
                match, child_scope = route.matches(scope)
                if match is Match.FULL:
                    scope.setdefault("router", self)
                    scope["route"] = route
                    scope.update(child_scope)
                    await route.handle(scope, receive, send)
                    return
        await super().app(scope, receive, send)


def fixed_routes(routes: Sequence[BaseRoute]) -> dict[str, Route]:
    """The routes of a path without parameters that no earlier route's pattern matches, by path."""
    found: dict[str, Route] = {}
    for index, route in enumerate(routes):
        if not isinstance(route, Route) or route.param_convertors or route.path in found:
            continue
        if not any(_may_match(earlier, route.path) for earlier in routes[:index]):
            found[route.path] = route
    return found


def _may_match(route: BaseRoute, path: str) -> bool:
    pattern = getattr(route, "path_regex", None)
    return pattern is None or pattern.match(path) is not None


class DirectRoutes:
    """Calls bare ASGI endpoints straight from the middleware stack: the fixed routes of ``routes`` (by
    path), else the first of ``leading`` (the routes the router tries first, in its order) that matches
    the request fully. ``handlers`` answer the exceptions they name (by class, the closest base first),
    and any other exception propagates as it would from the router. A request none of them takes,
    or one with a ``root_path``, goes down the stack to the router."""

    def __init__(
        self,
        app: ASGIApp,
        routes: Mapping[str, Route],
        handlers: Mapping[type[BaseException], ExceptionHandler],
        leading: Sequence[Route] = (),
    ) -> None:
        self.app, self.routes, self.handlers, self.leading = app, dict(routes), dict(handlers), tuple(leading)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = self._route_for(scope) if scope["type"] == "http" and not scope.get("root_path") else None
        if route is None:
            await self.app(scope, receive, send)
            return
        try:
            await route.app(scope, receive, send)
        except Exception as exc:
            handler = self._handler_for(exc)
            if handler is None:
                raise
            response = await handler(Request(scope, receive), exc)
            await response(scope, receive, send)

    def _route_for(self, scope: Scope) -> Route | None:
        route = self.routes.get(scope["path"])
        if route is not None:  # matched by the dict lookup: all that is left of `Route.matches` is the method
            return None if route.methods and scope["method"] not in route.methods else route
        for route in self.leading:
            match, child_scope = route.matches(scope)
            if match is Match.FULL:
                scope.update(child_scope)  # the path parameters, as the router sets them
                return route
            if match is Match.PARTIAL:  # the router may find a full match further on, or answer 405
                return None
        return None

    def _handler_for(self, exc: Exception) -> ExceptionHandler | None:
        for kind in type(exc).__mro__:
            if kind in self.handlers:
                return self.handlers[kind]
        return None


def direct_routes(routes: Mapping[str, Route]) -> dict[str, Route]:
    """The fixed routes (`fixed_routes`) whose endpoint is a bare ASGI app, not a request function."""
    return {path: route for path, route in routes.items() if _is_bare(route)}


def leading_routes(routes: Sequence[BaseRoute]) -> list[Route]:
    """The routes of bare ASGI endpoints at the head of ``routes``, before any other: trying them in
    their order first is what the router does (V2's infer routes come first)."""
    leading: list[Route] = []
    for route in routes:
        if not isinstance(route, Route) or not _is_bare(route):
            break
        leading.append(route)
    return leading


def _is_bare(route: Route) -> bool:
    return route.app is route.endpoint
