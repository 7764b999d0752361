"""HAProxy's runtime API (its admin socket): one command a connection, its answer as text."""

from __future__ import annotations

import asyncio
import csv
import io
from pathlib import Path

from inferd.core.errors import InferdError

#: What HAProxy answers a change it made (an empty answer says the same).
DONE = ("New server registered.", "Server deleted.")


class HAProxyRefused(InferdError):
    """HAProxy refused a runtime command; the message quotes its answer."""


class RuntimeAPI:
    def __init__(self, socket: Path) -> None:
        self.socket = socket

    async def ask(self, text: str) -> str:
        reader, writer = await asyncio.open_unix_connection(str(self.socket))
        try:
            writer.write(text.encode() + b"\n")
            await writer.drain()
            return (await reader.read()).decode()
        finally:
            writer.close()

    async def change(self, text: str) -> None:
        """Run a command that changes HAProxy's state; `HAProxyRefused` with its answer otherwise."""
        answer = (await self.ask(text)).strip()
        if answer and answer not in DONE:
            raise HAProxyRefused(f"haproxy refused '{text}': {answer}")

    async def sessions(self) -> dict[str, int]:
        """Current sessions of each server (by its address), over every backend."""
        found: dict[str, int] = {}
        table = (await self.ask("show stat")).lstrip("# ")
        for row in csv.DictReader(io.StringIO(table)):
            if row.get("svname") in ("FRONTEND", "BACKEND") or not row.get("addr"):
                continue
            found[row["addr"]] = found.get(row["addr"], 0) + int(row.get("scur") or 0)
        return found
