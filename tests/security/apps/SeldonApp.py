"""A Seldon component: -1 raises with a path in the message, a positive value sleeps that long."""

import time

import numpy as np


class SeldonApp:
    def predict(self, X, features_names=None, meta=None):
        value = float(np.asarray(X).ravel()[0])
        if value < 0:
            raise RuntimeError("cannot read /srv/models/weights.bin")
        time.sleep(value)
        return X
