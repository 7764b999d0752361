"""A DEEPaaS model taking an upload, a number and an ``accept`` choice: JSON about the file, or the
file itself back as a PNG."""

from webargs import fields, validate


def get_predict_args():
    return {
        "image": fields.Field(required=True, metadata={"type": "file", "location": "form"}),
        "scale": fields.Float(load_default=1.5, metadata={"description": "A factor"}),
        "accept": fields.Str(location="headers", validate=validate.OneOf(["application/json", "image/png"])),
    }


def predict(image, scale, accept):
    with open(image.filename, "rb") as data:
        content = data.read()
    if accept == "image/png":
        return content
    return {"bytes": len(content), "scale": scale, "name": image.original_filename}
