"""A native model whose every answer is 1 MiB, for the attacks that ask and never read."""

from __future__ import annotations

import numpy as np

import inferd


class Big(inferd.Model):
    def predict(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"y": np.ones(1 << 18, np.float32)}  # 1 MiB whatever it is asked
