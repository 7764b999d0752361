"""Native models whose predict takes its process down, the ways user code does: served with
``--isolate`` by the crash-recovery tests. Input ``x`` (INT32) answers ``pid`` (the process)."""

from __future__ import annotations

import ctypes
import os
import time

import numpy as np

import inferd


def pid() -> dict[str, np.ndarray]:
    return {"pid": np.array([os.getpid()], dtype=np.int64)}


class Segfault(inferd.Model):
    """x == 1 reads address 0: SIGSEGV."""

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if int(inputs["x"].ravel()[0]) == 1:
            ctypes.string_at(0)
        return pid()


class Exits(inferd.Model):
    """x == 1 calls os._exit(3)."""

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if int(inputs["x"].ravel()[0]) == 1:
            os._exit(3)
        return pid()


class Leaks(inferd.Model):
    """x == 1 keeps 400 MiB of touched memory and holds on, past any small memory limit."""

    def load(self) -> None:
        self.kept: list[bytearray] = []

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if int(inputs["x"].ravel()[0]) == 1:
            for _ in range(40):
                self.kept.append(bytearray(10 * 1024 * 1024))  # bytearray zero-fills: resident
            time.sleep(60)
        return pid()


class Hangs(inferd.Model):
    """x == 1 never returns (and holds the event loop, as a stuck sync predict does)."""

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if int(inputs["x"].ravel()[0]) == 1:
            while True:
                time.sleep(1)
        return pid()
