"""A Seldon MODEL: doubles, and notes the feedback it gets in the file $GRAPH_FEEDBACK_LOG."""

import json
import os


class Doubler:
    def __init__(self, label="doubler"):
        self.label = label

    def predict(self, X, names, meta=None):
        return X * 2

    def send_feedback(self, features, names, reward, truth, routing=None):
        with open(os.environ["GRAPH_FEEDBACK_LOG"], "a") as out:
            out.write(json.dumps({"node": self.label, "reward": reward, "routing": routing}) + "\n")
        return []
