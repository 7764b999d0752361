"""A model that takes as many seconds as it is given: for admission limits and shed requests."""

import time


class Slow:
    def predict(self, X, names, meta=None):
        time.sleep(float(X.ravel()[0]))
        return X
