"""A model with nothing but predict, served directly by module:attr (not an entry point)."""


class Minimal:
    def predict(self, **kwargs):
        return [1, 2, 3]
