"""A route for "every other path", as Flask-era platforms (Cortex, ABEJA) answered them.

Starlette takes a full match at once and a partial match (right path, wrong method) only when
nothing matched fully. `FallbackRoute` matches every path but only partially, so listed last it
answers the paths no other route knows, while a path that exists with other methods keeps its 405.
V2 paths are left to V2's own 404.
"""

from __future__ import annotations

from starlette.routing import Match, Route
from starlette.types import Scope

#: Starlette routes a function to GET only unless told otherwise.
ANY_METHOD = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
V2_PREFIX = "/v2"


class FallbackRoute(Route):
    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        path = scope.get("path", "")
        if path == V2_PREFIX or path.startswith(V2_PREFIX + "/"):
            return Match.NONE, {}
        match, child = super().matches(scope)
        return (Match.PARTIAL if match is Match.FULL else match), child
