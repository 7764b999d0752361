"""An ABEJA 18.10 handler: a generator over the decoded inputs, driven by the test's JSON."""

import io
import os
import time

import numpy as np
from PIL import Image

print("legacy handler imported")  # handler output belongs to the log, never to run-local's stdout


def handler(input_iter, context):
    for data in input_iter:
        if isinstance(data, np.ndarray):
            yield {"shape": list(data.shape), "dtype": str(data.dtype), "mean": data.reshape(-1, 3).mean(0)}
        elif isinstance(data, dict) and "pos_frames" in data:
            image = data["image"]
            yield {
                "pos_frames": data["pos_frames"],
                "pos_msec": data["pos_msec"],
                "shape": list(image.shape),
                "level": int(image.mean()),
            }
        else:
            yield from answer_json(data, context)


def answer_json(data, context):
    action = data.get("action") if isinstance(data, dict) else None
    if action == "invalid":
        raise context.exceptions.InvalidInput("need a number")
    if action == "model":
        raise context.exceptions.ModelError("model blew up")
    if action == "crash":
        raise KeyError("boom")
    if action == "context":
        yield {
            "method": context.http_method,
            "headers": context.http_headers,
            "parameters": context.parameters,
            "by_key": context["http_method"] == context.http_method,
        }
    elif action == "image":
        buffer = io.BytesIO()
        Image.new("RGB", (8, 6), (0, 0, 255)).save(buffer, format="JPEG")
        metadata = [("Content-Type", "image/jpeg"), ("X-Size", "8x6")]
        yield context.datatypes.Response([buffer.getvalue()], metadata=metadata)
    elif action == "many":
        yield 1
        yield {"b": np.int64(2)}
        yield np.array([3.5])
    elif action == "mixed":
        yield context.datatypes.Response([b"x"])
        yield 1
    elif action == "none":
        return
    elif action == "sleep":
        time.sleep(data["seconds"])
        yield {"slept": data["seconds"]}
    elif action == "env":
        yield {name: os.environ.get(name) for name in data["names"]}
    else:
        yield {"echo": data}
