"""An ABEJA 19.04+ handler: returns a response dict, chosen by the test's request."""

import datetime
import http
import json
import os
import threading
import time

import numpy as np

print("runtime handler imported")


def handler(request, context):
    if request["http_method"] == "GET":
        return {"content_type": "application/json", "content": {"query": request.read().decode()}}
    content_type = request["content_type"]
    if content_type.startswith("multipart/form-data"):
        parts = [
            {
                "form_name": part["form_name"],
                "file_name": part["file_name"],
                "content_type": part["content_type"],
                "body": part.read().decode("latin-1"),
            }
            for part in request["contents"]
        ]
        return {"content_type": "application/json", "content": {"parts": parts}}
    if not content_type.startswith("application/json"):
        return {"content_type": content_type, "content": [request.read()]}
    return CASES[json.load(request).get("case", "echo")](request, context)


def sleep(request, context):
    time.sleep(1.0)
    return {"content": "slept"}


def headers(request, context):
    seen = request["http_headers"]
    return {
        "content_type": "application/json",
        "content": {
            "accept": seen["Accept"],
            "multi": seen.get_all("X-Multi"),
            "keys": [header["key"] for header in request["headers"]],
            "method": request["http_method"],
            "metadata": request["metadata"],
            "parts": len(request["contents"]),
        },
    }


CASES = {
    "status": lambda request, context: {
        "status_code": http.HTTPStatus.CREATED,
        "content_type": "application/json",
        "content": {"a": 1, "é": "ü"},
        "metadata": {"X-Foo": "bar"},
    },
    "list": lambda request, context: {"content": [1, 2, 3]},
    "bytes": lambda request, context: {"content": b"ab"},
    "raw": lambda request, context: {"content_type": "application/octet-stream", "content": [b"a", b"b"]},
    "csv": lambda request, context: {
        "content_type": "text/csv",
        "content": [{"a": 1, "b": "x,y"}, {"a": 3, "b": 4}],
    },
    "pairs": lambda request, context: {"content_type": "application/json", "content": [[("b", 1), ("a", 2)]]},
    "numpy": lambda request, context: {
        "content_type": "application/json",
        "content": {"array": np.arange(3), "float": np.float32(1.5), "day": datetime.date(2019, 6, 1)},
    },
    "empty": lambda request, context: {},
    "not_a_dict": lambda request, context: "hello",
    "raise": lambda request, context: 1 / 0,
    "context": lambda request, context: {"content_type": "application/json", "content": context},
    "env": lambda request, context: {
        "content_type": "application/json",
        "content": {
            "result_dir": os.environ["ABEJA_TRAINING_RESULT_DIR"],
            "cwd": os.getcwd(),
            "user": os.environ.get("USER_VAR"),
        },
    },
    "sleep": sleep,
    "thread": lambda request, context: {"content": threading.current_thread().name},
    "headers": headers,
    "echo": lambda request, context: {"content_type": "application/json", "content": {"echo": True}},
}
