"""A Seldon MODEL: doubles, and notes the feedback it gets in the file named by ``log``."""

import json


class Doubler:
    def __init__(self, log="", label="doubler"):
        self.log, self.label = log, label

    def predict(self, X, names, meta=None):
        return X * 2

    def send_feedback(self, features, names, reward, truth, routing=None):
        if self.log:
            with open(self.log, "a") as out:
                out.write(json.dumps({"node": self.label, "reward": reward, "routing": routing}) + "\n")
        return []
