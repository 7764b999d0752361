"""Answers with an open file (sent as an attachment); reads an argument from a cookie."""

import os
import tempfile

from webargs import fields, validate


def get_predict_args():
    return {
        "rows": fields.Int(location="cookies", missing=2),
        "accept": fields.Str(location="headers", validate=validate.OneOf(["text/csv"])),
    }


def predict(rows, accept):
    folder = tempfile.mkdtemp(prefix="filer-")
    path = os.path.join(folder, "data.csv")
    with open(path, "w") as out:
        out.writelines(f"{row},{row * row}\n" for row in range(rows))
    handle = open(path, "rb")  # the server reads and closes it
    os.unlink(path)  # still readable through the handle; nothing is left behind
    os.rmdir(folder)
    return handle
