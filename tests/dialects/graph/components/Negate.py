"""A Seldon OUTPUT_TRANSFORMER: negates on the way out."""


class Negate:
    def transform_output(self, X, names, meta=None):
        return -X
