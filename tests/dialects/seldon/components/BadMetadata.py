"""Metadata that fails validation: /metadata answers 500, predict keeps working."""


class BadMetadata:
    def init_metadata(self):
        return {"name": "bad", "inputs": [{"messagetype": "tensor", "schema": {"shape": "not a list"}}]}

    def predict(self, X, names, meta=None):
        return X
