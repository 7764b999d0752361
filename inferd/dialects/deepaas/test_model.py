"""``deepaas-test``: the built-in model DEEPaaS serves when no model loads (spec §12).

It exercises every part of the API: a required file and integer, an enum, the ``accept`` header with
JSON, text and PNG answers, a response schema, and a training that sleeps.
"""

from __future__ import annotations

import base64
import logging
import struct
import time
import zlib
from typing import Any, ClassVar

from marshmallow import fields, validate

from inferd.dialects.deepaas.settings import TEST_MODEL

logger = logging.getLogger("inferd.deepaas")

NAME = TEST_MODEL
METADATA = {
    "id": "0",
    "name": NAME,
    "description": (
        "This is not a model at all, just a placeholder for testing the API functionality. If you are "
        "seeing this, it is because DEEPaaS could not load a valid model."
    ),
    "author": "inferd",
    "version": "0.0.1",
    "url": "https://github.com/indigo-dc/DEEPaaS/",
    "license": "Apache 2.0",
}


def _png(width: int = 4, height: int = 4) -> bytes:
    """A small valid PNG (an orange square), written with zlib so no imaging library is needed."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x80\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


PNG = _png()
DATA_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()


class TestModel:
    """The placeholder model; every method is what DEEPaaS's own test model does."""

    schema: ClassVar[dict[str, fields.Field]] = {
        "date": fields.Date(),
        "labels": fields.List(fields.Nested({"label": fields.Str(), "probability": fields.Float()})),
        "data": fields.Str(),
    }

    def get_metadata(self) -> dict[str, Any]:
        return dict(METADATA)

    def warm(self) -> None:
        logger.debug("deepaas-test is warm")

    def get_predict_args(self) -> dict[str, fields.Field]:
        return {
            "data": fields.Field(
                required=True,
                metadata={
                    "description": "Data file to perform inference on.",
                    "location": "form",
                    "type": "file",
                },
            ),
            "parameter": fields.Int(
                required=True, metadata={"description": "This is a parameter for prediction"}
            ),
            "parameter_three": fields.Str(
                required=False,
                validate=validate.OneOf(["foo", "bar"]),
                metadata={"description": "This is a parameter for prediction, with an enum"},
            ),
            "accept": fields.Str(
                metadata={
                    "description": "Media type(s) that is/are acceptable for the response.",
                    "location": "headers",
                },
                validate=validate.OneOf(["application/json", "text/plain", "image/png"]),
            ),
        }

    def predict(self, **kwargs: Any) -> Any:
        accept = kwargs.get("accept")
        if accept == "image/png":
            return PNG
        if accept == "text/plain":
            return DATA_URL
        # Upstream answered "2019-01-1", which its own schema's date format refuses (found by fuzzing).
        return {"date": "2019-01-01", "labels": [{"label": "foo", "probability": 1.0}], "data": DATA_URL}

    def get_train_args(self) -> dict[str, fields.Field]:
        return {
            "sleep": fields.Int(required=True, metadata={"description": "Seconds the training sleeps."}),
            "parameter_two": fields.Str(metadata={"description": "This is a parameter for training"}),
        }

    def train(self, sleep: int, **kwargs: Any) -> None:
        if sleep < 0:
            raise ValueError("sleep length must be non-negative")
        time.sleep(sleep)
