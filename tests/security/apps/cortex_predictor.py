"""A Cortex Python predictor: "boom" raises with a path in the message, a number sleeps that long."""

import time


def init(model_path, metadata):
    pass


def predict(sample, metadata):
    if sample == "boom":
        raise RuntimeError("cannot read /srv/models/weights.bin")
    time.sleep(float(sample))
    return {"slept": sample}
