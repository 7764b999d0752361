"""An ABEJA 19.04 handler that reports the headers (Authorization, Cookie) and part file names it
sees; header ``x-sleep`` makes it sleep, ``x-boom`` raise with a path in the message."""

import time


def handler(request, context):
    headers = request["http_headers"]
    if headers["x-boom"]:
        raise RuntimeError("cannot read /srv/models/weights.bin")
    time.sleep(float(headers["x-sleep"] or 0))
    return {
        "status_code": 200,
        "content_type": "application/json",
        "content": {
            "authorization": headers["authorization"],
            "cookie": headers["cookie"],
            "files": [part["file_name"] for part in request["contents"]],
        },
    }
