"""A Seldon TRANSFORMER: adds one on the way in."""


class AddOne:
    def transform_input(self, X, names, meta=None):
        return X + 1
