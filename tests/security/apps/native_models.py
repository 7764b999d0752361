"""Native models for the security tests: each input ``seconds`` makes them sleep that long."""

from __future__ import annotations

import time

import numpy as np

import inferd


class Sleepy(inferd.Model):
    """Synchronous: sleeps ``seconds`` (runs in a thread once a request timeout is set)."""

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        time.sleep(float(inputs["seconds"].ravel()[0]))
        return {"done": np.array([True])}


class Boom(inferd.Model):
    """Raises with a path and a traceback in its message, which must never reach a client."""

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        raise RuntimeError("cannot read /srv/models/weights.bin\nTraceback (most recent call last): x")
