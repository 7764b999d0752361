"""The graph dialect's own settings (besides what every dialect reads)."""

from __future__ import annotations

from pydantic import Field

from inferd.core.settings import DialectSettings


class GraphSettings(DialectSettings):
    """How long a graph waits for its remote nodes."""

    graph_node_timeout: float = Field(30.0, gt=0)
    """Seconds a remote node of an inference graph (or, on Ray, a node's deployment) may take to answer
    one call; a node that takes longer, like one that cannot be reached, fails the request with 503
    naming the node."""

    graph_startup_timeout: float = Field(10.0, ge=0)
    """Seconds a graph waits at start-up for its remote nodes to answer; a node still unreachable
    then stops the server with an error naming it."""
