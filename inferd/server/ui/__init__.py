"""The try-it page: every served model with its state and traffic, and a form per model generated from
what the model and its dialect say about it. Plain HTML, CSS and a little JavaScript, served from the
package (no CDN), always under `PREFIX` and also at ``/`` where the dialect has no page of its own."""

from inferd.server.ui.routes import PREFIX, claims_root, routes

__all__ = ["PREFIX", "claims_root", "routes"]
