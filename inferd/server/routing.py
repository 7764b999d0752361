"""Starlette's router with a shortcut for the routes of a fixed path.

Starlette tries routes in order, one regular expression each. A dialect's routes sit behind the V2
table, the metrics and the page, so a request to ABEJA's ``/`` or Seldon's ``/predict`` paid a score
of failed matches before its own, which cost more than a small handler. `IndexedRouter` finds a fixed
path's route with one dict lookup, when no earlier route could match that path (checked once, when
the app is built), and otherwise scans as Starlette does, so the answer is always the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.routing import BaseRoute, Match, Route, Router
from starlette.types import Receive, Scope, Send


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
