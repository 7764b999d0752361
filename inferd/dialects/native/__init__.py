"""inferd's own convention: a subclass of `inferd.Model`, served over V2 only."""

from inferd.dialects.native.loader import dialect

__all__ = ["dialect"]
