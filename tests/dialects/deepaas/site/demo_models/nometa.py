"""A model whose get_metadata fails: predict still works, only the metadata routes answer 500."""

from __future__ import annotations

from typing import Any

from webargs import fields


def get_metadata() -> dict[str, Any]:
    raise RuntimeError("metadata is not available")


def get_predict_args() -> dict[str, Any]:
    return {"x": fields.Int(required=True)}


def predict(x: int) -> int:
    return x * 2
