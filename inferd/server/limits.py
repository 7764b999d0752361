"""Body limits per route: an app whose routes take bodies of very different sizes (the control
process's JSON requests beside its archive uploads) gives the small limit to every request, and a
larger one to the routes declared `Sized`. The request middleware asks `RouteLimits` before any byte of
the body is read, and its 413 names the limit and the setting that sets it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from inferd.protocols.control import ControlRoute


class BodyLimit(NamedTuple):
    size: int
    #: The setting that sets it (``INFERD_MAX_BUNDLE_SIZE``), named in the 413; empty: none named.
    setting: str = ""


class Sized(Route):
    """A route whose requests may carry bodies up to ``body_limit``."""

    def __init__(
        self, path: str, endpoint: Callable[..., Any], *, methods: list[str], body_limit: BodyLimit
    ) -> None:
        super().__init__(path, endpoint, methods=methods)
        self.body_limit = body_limit


class SizedControlRoute(Sized, ControlRoute):
    """A `ControlRoute` (refused from foreign origins) taking large bodies: an archive upload."""


class RouteLimits:
    """The body limit of a request: its `Sized` route's, else ``default``."""

    def __init__(self, routes: Iterable[BaseRoute], default: BodyLimit) -> None:
        self.sized = [route for route in routes if isinstance(route, Sized)]
        self.default = default

    def __call__(self, scope: Scope) -> BodyLimit:
        for route in self.sized:
            if route.matches(scope)[0] is Match.FULL:
                return route.body_limit
        return self.default
