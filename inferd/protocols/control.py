"""The mark of a control route: one that changes what the server serves or runs (V2's repository
load and unload, DEEPaaS's training jobs, the try-it page's login) rather than answering an
inference.

Such a route is what a cross-site page must not reach: a browser sends a "simple" request (a POST of
``text/plain`` or a form) to any origin without asking first. The server refuses the unsafe methods
of every `ControlRoute` from a foreign ``Origin`` (`inferd.server.origins`), however the request is
authenticated. A new family of control routes joins by being declared as `ControlRoute`s.
"""

from __future__ import annotations

from starlette.routing import Route

#: Methods that change nothing: a control route answers them from any origin.
SAFE_METHODS = frozenset(("GET", "HEAD", "OPTIONS"))


class ControlRoute(Route):
    """A `Route` whose unsafe methods change the server's state; it routes like any other."""
