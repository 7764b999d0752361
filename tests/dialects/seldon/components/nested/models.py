"""A component named the ``pkg.mod.Class`` way."""


class Nested:
    def predict(self, X, names, meta=None):
        return {"nested": True}
