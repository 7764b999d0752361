"""What a server of Seldon's API calls on a component, whichever dialect built it: `Component`, and
the `Reply` its methods answer with. The Seldon dialect's `SeldonModel` is one; the graph dialect runs
its local nodes through this interface, so it never imports the Seldon dialect."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, Protocol, TypeVar

from inferd.protocols.seldon.payload import Decoded

T = TypeVar("T")


class Reply(NamedTuple):
    """A Seldon method's answer: the message (plain JSON values) and its HTTP status."""

    body: Any
    status: int = 200


class Component(Protocol):
    name: str

    def load(self) -> None:
        """Build the user object (its constructor with the parameters, then its ``load``)."""

    def unload(self) -> Awaitable[None] | None: ...

    async def call_user(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)``, on the event loop or in a thread as the component runs user code."""

    async def answer(self, method: str, request: Any) -> Reply:
        """The answer of the Seldon ``method`` (``predict``, ``route`` ...) to the message ``request``."""

    def passes_decoded(self, method: str) -> bool:
        """Whether ``method`` takes and gives `Decoded` messages (`call_decoded`)."""

    def call_decoded(self, method: str, request: Any) -> Decoded | dict[str, Any]:
        """``method`` of a message or a `Decoded` one, its answer left decoded when it can be."""

    def metadata_answer(self) -> dict[str, Any]:
        """The component's ``/metadata`` document."""
