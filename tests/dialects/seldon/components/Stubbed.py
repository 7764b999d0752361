"""A SeldonComponent subclass that implements predict only: the other stubs count as absent."""

from seldon_core.user_model import SeldonComponent


class Stubbed(SeldonComponent):
    def predict(self, X, names, meta=None):
        return [["a", 1]]
