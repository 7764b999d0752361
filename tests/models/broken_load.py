"""A model whose weights are missing: loading it fails."""

from __future__ import annotations

import inferd


class Broken(inferd.Model):
    def load(self) -> None:
        raise FileNotFoundError("weights.bin")
