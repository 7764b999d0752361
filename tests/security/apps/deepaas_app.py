"""A DEEPaaS model that reports what it was given: the Authorization header argument, the uploaded
file's name as the model sees it, and its temporary copy's suffix."""

import os
import tempfile
import time

from webargs import fields


class Uploader:
    def get_metadata(self):
        return {"name": "uploader", "author": "tests", "version": "1.0"}

    def get_predict_args(self):
        return {
            "data": fields.Field(required=False, type="file", location="form"),
            "authorization": fields.Str(location="headers"),
            "seconds": fields.Float(missing=0.0),
            "boom": fields.Bool(missing=False),
        }

    def predict(self, **kwargs):
        if kwargs["boom"]:
            raise RuntimeError("cannot read /srv/models/weights.bin")
        time.sleep(kwargs["seconds"])
        data = kwargs.get("data")
        answer = {"authorization": kwargs.get("authorization")}
        if data is not None:
            answer["original_filename"] = data.original_filename
            answer["temp_name"] = os.path.basename(data.filename)
            answer["in_temp_dir"] = os.path.dirname(data.filename) == tempfile.gettempdir()
        return answer
