"""Native models for the batching tests: each row's answer says how many rows its call had."""

from __future__ import annotations

import asyncio

import numpy as np

import inferd


class Rows(inferd.Model):
    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        x = inputs["x"]
        return {"y": x * 2, "rows": np.full(len(x), len(x), dtype=np.int64)}


class Slow(inferd.Model):
    async def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        await asyncio.sleep(0.3)
        return {"y": inputs["x"]}
