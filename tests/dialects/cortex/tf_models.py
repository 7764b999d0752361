"""TensorFlow SavedModels for the Cortex tests, built here (never downloaded).

Run as ``python -m tests.dialects.cortex.tf_models DIR`` in a subprocess, so the test process itself never
imports TensorFlow. Writes:

* ``iris/1`` and ``iris/2``: a softmax regression fitted by scikit-learn on its bundled iris data, with
  signatures ``predict`` and ``serving_default``; version 1 has its weights negated, so a server that
  picks the wrong version gives wrong labels. Outputs: int64 ``class_ids``, float ``probabilities``,
  string ``classes``.
* ``iris.zip``: the ``iris`` folder zipped under a top-level ``export/`` directory.
* ``pair/1``: one signature over two inputs, int32 ``a`` and float ``b``: ``sum`` and int64 ``count``.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression

CLASSES = [b"iris-setosa", b"iris-versicolor", b"iris-virginica"]


class Iris(tf.Module):
    def __init__(self, weights: np.ndarray, bias: np.ndarray) -> None:
        super().__init__()
        self.weights = tf.Variable(weights.astype(np.float32))
        self.bias = tf.Variable(bias.astype(np.float32))
        self.classes = tf.constant(CLASSES)

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def predict(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        logits = tf.matmul(x, self.weights) + self.bias
        class_ids = tf.argmax(logits, axis=1, output_type=tf.int64)
        return {
            "class_ids": class_ids[:, None],
            "probabilities": tf.nn.softmax(logits),
            "classes": tf.gather(self.classes, class_ids)[:, None],
        }


class Pair(tf.Module):
    @tf.function(
        input_signature=[
            tf.TensorSpec([None], tf.int32, name="a"),
            tf.TensorSpec([None], tf.float32, name="b"),
        ]
    )
    def combine(self, a: tf.Tensor, b: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"sum": tf.cast(a, tf.float32) + b, "count": tf.size(a, out_type=tf.int64)[None]}


def build(folder: Path) -> None:
    data = load_iris()
    fitted = LogisticRegression(max_iter=1000).fit(data.data, data.target)
    weights, bias = fitted.coef_.T, fitted.intercept_
    for version, sign in (("1", -1.0), ("2", 1.0)):
        iris = Iris(sign * weights, sign * bias)
        signatures = {"predict": iris.predict, "serving_default": iris.predict}
        tf.saved_model.save(iris, str(folder / "iris" / version), signatures=signatures)
    shutil.copytree(folder / "iris", folder / "zip-staging" / "export")
    shutil.make_archive(str(folder / "iris"), "zip", folder / "zip-staging")
    shutil.rmtree(folder / "zip-staging")
    pair = Pair()
    tf.saved_model.save(pair, str(folder / "pair" / "1"), signatures={"combine": pair.combine})


if __name__ == "__main__":
    build(Path(sys.argv[1]))
