"""A Seldon COMBINER: the element-wise sum of its children's answers."""

import numpy as np


class Summer:
    def aggregate(self, Xs, names_list):
        return np.sum([np.asarray(X) for X in Xs], axis=0)
