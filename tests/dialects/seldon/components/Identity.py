"""The plainest Seldon model: answers what it gets (the spec's identity examples)."""


class Identity:
    def predict(self, X, names, meta=None):
        return X
