"""A Seldon MODEL whose code raises."""


class Failing:
    def predict(self, X, names, meta=None):
        raise ValueError("boom: the model is broken")
