"""A model written against deepaas 2.x's classes: it subclasses BaseModel and checks that its upload
is an ``UploadedFile`` before opening it, as real models do."""

from __future__ import annotations

from typing import Any

from deepaas.model.v2.base import BaseModel
from deepaas.model.v2.wrapper import UploadedFile
from webargs import fields


class Typed(BaseModel):
    def get_metadata(self) -> dict[str, Any]:
        return {"description": "checks the type of its upload"}

    def warm(self) -> None:
        pass

    def get_predict_args(self) -> dict[str, Any]:
        return {"data": fields.Field(required=True, metadata={"location": "form", "type": "file"})}

    def predict(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, UploadedFile):
            raise TypeError(f"not an UploadedFile: {type(data)!r}")
        with open(data.filename, "rb") as upload:
            size = len(upload.read())
        kind = type(data)
        return {
            "type": f"{kind.__module__}.{kind.__qualname__}",
            "size": size,
            "name": data.original_filename,
        }

    def get_train_args(self) -> dict[str, Any]:
        return {}

    def train(self, **kwargs: Any) -> None:
        return None
