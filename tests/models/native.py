"""Toy native models served together by the ``models_server`` fixture."""

from __future__ import annotations

import asyncio

import numpy as np

import inferd


class Echo(inferd.Model):
    """Returns every input unchanged, under the same name."""

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(inputs)


class Upper(inferd.Model):
    """Upper-cases BYTES; returns a non-UTF-8 output too, which only the binary layout can carry."""

    async def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        text = inputs["text"]
        upper = np.array([value.upper() for value in text.ravel()], dtype=object).reshape(text.shape)
        return {"upper": upper, "raw": np.array([b"\xff\xfe"], dtype=object)}


class Failing(inferd.Model):
    """Raises with a message that must never reach the client."""

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        raise RuntimeError("secret internal detail /srv/model/weights.bin")


class Slow(inferd.Model):
    """Sleeps for ``seconds`` (input) before answering: in-flight work for shutdown tests."""

    async def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        await asyncio.sleep(float(inputs["seconds"].ravel()[0]))
        return {"done": np.array([True])}


class Pid(inferd.Model):
    """Answers with the id of the worker process that ran it."""

    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import os

        return {"pid": np.array([os.getpid()], dtype=np.int64)}
