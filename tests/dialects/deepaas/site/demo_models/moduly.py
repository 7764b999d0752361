"""A module entry point: its functions are the model, and a response schema given as a dict."""

from webargs import fields

schema = {"total": fields.Int(required=True)}


def get_metadata():
    return {"id": "moduly-id", "description": "sums numbers"}


def get_predict_args():
    return {"numbers": fields.List(fields.Int(), required=True)}


def predict(numbers):
    if numbers == [0]:
        return {"total": "not a number"}
    if numbers == [1]:
        return {"total": 1, "unexpected": True}
    return {"total": sum(numbers)}
