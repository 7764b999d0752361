"""The benchmark's model: a Seldon MODEL that doubles its features."""


class Scale:
    def predict(self, X, names, meta=None):
        return X * 2
