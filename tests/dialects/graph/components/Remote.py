"""A Seldon component answering every node call, served on its own to be the remote nodes of a
graph: triples (predict), adds one (transform_input), negates (transform_output), sums (aggregate)."""

import numpy as np


class Remote:
    def predict(self, X, names, meta=None):
        return X * 3

    def transform_input(self, X, names, meta=None):
        return X + 1

    def transform_output(self, X, names, meta=None):
        return -X

    def aggregate(self, Xs, names_list):
        return np.sum([np.asarray(X) for X in Xs], axis=0)
