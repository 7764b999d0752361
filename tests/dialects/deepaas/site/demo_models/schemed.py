"""A module entry point whose response schema is a marshmallow Schema class, with a url argument."""

from marshmallow import Schema
from marshmallow import fields as mfields
from webargs import fields


class Result(Schema):
    label = mfields.Str(required=True)
    score = mfields.Float(required=True)


schema = Result


def get_predict_args():
    return {"link": fields.Url(required=True, description="Where the input lives")}


def predict(link):
    if link.endswith("/wrong"):
        return {"label": 3}
    return {"label": link.rsplit("/", 1)[-1], "score": 0.5}
