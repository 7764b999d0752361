"""A class entry point with instance methods and state set by warm()."""

import json
import os

from marshmallow import Schema
from marshmallow import fields as mfields
from webargs import fields, validate


class Answer(Schema):
    label = mfields.Str(required=True)
    score = mfields.Float(required=True)


class Classy:
    def __init__(self):
        self.warmed = 0

    def get_metadata(self):
        return {"name": "Classy model", "author": "tests", "version": "1.0", "extra": [1, 2]}

    def warm(self):
        self.warmed += 1

    def get_predict_args(self):
        return {
            "number": fields.Int(required=True, description="An integer"),
            "mode": fields.Str(
                required=False, missing="foo", enum=["foo", "bar"], validate=validate.OneOf(["foo", "bar"])
            ),
            "ratio": fields.Float(location="query", missing=0.5),
            "flag": fields.Bool(missing=False),
            "tags": fields.List(fields.Str(), missing=[]),
            "data": fields.Field(required=False, type="file", location="form", description="A file"),
            "note": fields.Str(location="form"),
            "token": fields.Str(location="headers"),
            "accept": fields.Str(
                location="headers",
                validate=validate.OneOf(["application/json", "text/plain", "application/octet-stream"]),
            ),
        }

    def predict(self, **kwargs):
        data = kwargs.get("data")
        if kwargs["number"] == 13:
            raise RuntimeError("unlucky number")
        if kwargs["number"] == 402:
            raise PaymentRequired()
        content = None
        if data is not None and not isinstance(data, str):
            with open(data.filename, "rb") as handle:
                content = handle.read().decode()
            kwargs["data"] = {
                "name": data.name,
                "content_type": data.content_type,
                "original_filename": data.original_filename,
                "path_exists": os.path.exists(data.filename),
                "path": data.filename,
            }
        if kwargs["accept"] == "text/plain":
            return f"number={kwargs['number']}"
        if kwargs["accept"] == "application/octet-stream":
            return bytes([kwargs["number"] % 256]) * 3
        return {
            "args": json.loads(json.dumps(kwargs, default=str)),
            "content": content,
            "warmed": self.warmed,
        }

    def get_train_args(self):
        return {
            "epochs": fields.Int(required=True),
            "fail": fields.Bool(missing=False),
            "seconds": fields.Float(missing=0.0),
            "data": fields.Field(type="file", location="form"),
        }

    def train(self, epochs, fail=False, seconds=0.0, data=None):
        import time

        time.sleep(seconds)
        if fail:
            raise ValueError("training failed on purpose")
        content = None
        if data is not None:
            with open(data.filename) as handle:
                content = handle.read()
        return {"epochs": epochs, "warmed": self.warmed, "content": content}


class PaymentRequired(Exception):
    """Looks like an aiohttp HTTPException to the server."""

    status_code = 418
    reason = "I'm a teapot"


INSTANCE = Classy()
