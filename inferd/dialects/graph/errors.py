"""A node's failure, as the graph's client sees it: Seldon's error body and the node's status, with
the node named in ``info`` (the executor answers with the failing node's status, as Seldon's does)."""

from __future__ import annotations

from typing import Any

from inferd.core.errors import InferdError, InvalidInput, Unavailable
from inferd.protocols.seldon.errors import INTERNAL_ERROR, SeldonError, as_seldon_error

UNAVAILABLE = 503


class NodeError(SeldonError):
    def __init__(
        self,
        node: str,
        info: str,
        status: int = 500,
        reason: str = INTERNAL_ERROR,
        not_implemented: bool = False,
    ) -> None:
        super().__init__(f"node '{node}': {info}", status, reason, not_implemented)
        self.node, self.detail = node, info

    def as_data(self) -> dict[str, Any]:
        """The error as plain data, to cross a process boundary; `from_data` rebuilds it."""
        return {
            "node": self.node,
            "info": self.detail,
            "status": self.status,
            "reason": self.reason,
            "not_implemented": self.not_implemented,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> NodeError:
        return cls(data["node"], data["info"], data["status"], data["reason"], data["not_implemented"])

    @classmethod
    def of(cls, node: str, exc: BaseException) -> NodeError:
        """``exc`` raised by the code of a local node, as Seldon would have answered it."""
        if isinstance(exc, NodeError):
            return exc
        error = as_seldon_error(exc)
        return cls(node, error.info, error.status, error.reason, error.not_implemented)

    @classmethod
    def answered(cls, node: str, status: int, body: Any) -> NodeError:
        """A node that answered ``status`` with ``body`` (Seldon's error body, or anything)."""
        found = body.get("status") if isinstance(body, dict) else None
        if isinstance(found, dict) and "info" in found:
            return cls(node, str(found["info"]), status, str(found.get("reason") or INTERNAL_ERROR))
        return cls(node, f"answered {status}: {str(body)[:200]}", status)

    @classmethod
    def unreachable(cls, node: str, address: str, why: str) -> NodeError:
        return cls(node, f"is unreachable at {address}: {why}", UNAVAILABLE)

    def as_inferd_error(self) -> InferdError:
        """The same failure for V2 clients, through inferd's status table."""
        if self.status == UNAVAILABLE:
            return Unavailable(self.info)
        if self.status < 500:
            return InvalidInput(self.info)
        return InferdError(self.info)
