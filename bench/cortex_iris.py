"""Cortex iris benchmark (issue 5): the Cortex route with its handlers against V2 on the same model.

One inferd server serves a Cortex project built here: scikit-learn's iris LogisticRegression
converted to ONNX with skl2onnx, and a 0.10 request handler (``pre_inference`` maps the four named
features to the ONNX input, ``post_inference`` turns the label into a class name). wrk then loads,
in alternation, ``POST /iris/classifier`` (the Cortex route) and ``POST /v2/models/classifier/infer``
(V2 on the raw ONNX model, handlers bypassed) and the table shows the Cortex route's req/s as a
ratio of V2's. Target: at least 0.90 at concurrency 16.

    .venv/bin/python bench/cortex_iris.py [--duration 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import sys
import tempfile
import textwrap
from pathlib import Path

from loadgen import start_inferd, wrk

TARGET = 0.90

CORTEX_BODY = '{"sepal_length": 5.2, "sepal_width": 3.6, "petal_length": 1.4, "petal_width": 0.3}'
V2_BODY = '{"inputs":[{"name":"float_input","shape":[1,4],"datatype":"FP32","data":[[5.2,3.6,1.4,0.3]]}]}'
HANDLER = """
LABELS = ["iris-setosa", "iris-versicolor", "iris-virginica"]
FEATURES = ["sepal_length", "sepal_width", "petal_length", "petal_width"]


def pre_inference(sample, signature, metadata):
    return {signature[0].name: [sample[name] for name in FEATURES]}


def post_inference(prediction, signature, metadata):
    return LABELS[int(prediction[0][0])]
"""
CONFIG = """
- kind: api
  name: classifier
  endpoint: /iris/classifier
  onnx:
    model: iris.onnx
    request_handler: handler.py
"""


def build_project(folder: Path) -> Path:
    """The Cortex project: model (no ZipMap, so V2 can carry every output), handler and config."""
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    features, labels = load_iris(return_X_y=True)
    features = features.astype("float32")
    model = LogisticRegression(max_iter=1000).fit(features, labels)
    onnx_model = to_onnx(
        model,
        initial_types=[("float_input", FloatTensorType([None, 4]))],
        options={id(model): {"zipmap": False}},
    )
    (folder / "iris.onnx").write_bytes(onnx_model.SerializeToString())
    (folder / "handler.py").write_text(textwrap.dedent(HANDLER))
    (folder / "cortex.yaml").write_text(textwrap.dedent(CONFIG))
    return folder / "cortex.yaml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per measured run [10]")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the two routes [3]")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is missing: sudo apt-get install -y wrk", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="cortex-iris-") as tmp:
        process, base = start_inferd(str(build_project(Path(tmp))))
        try:
            routes = {
                "cortex": (base + "/iris/classifier", CORTEX_BODY),
                "v2": (base + "/v2/models/classifier/infer", V2_BODY),
            }
            print(f"{'concurrency':>11}  {'cortex req/s':>12}  {'v2 req/s':>9}  {'cortex / v2':>11}")
            verdict = True
            for concurrency in args.concurrency:
                rates: dict[str, list[float]] = {"cortex": [], "v2": []}
                for _ in range(args.rounds):
                    for name, (url, body) in routes.items():
                        wrk(url, body, concurrency, 2)  # warm-up
                        rates[name].append(wrk(url, body, concurrency, args.duration))
                cortex, v2 = statistics.median(rates["cortex"]), statistics.median(rates["v2"])
                print(f"{concurrency:>11}  {cortex:>12,.0f}  {v2:>9,.0f}  {cortex / v2:>10.2f}x")
                if concurrency == 16:
                    verdict = cortex / v2 >= TARGET
            outcome = "PASS" if verdict else "FAIL"
            print(f"target: Cortex route >= {TARGET:.0%} of V2 at concurrency 16: {outcome}")
            return 0 if verdict else 1
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)


if __name__ == "__main__":
    raise SystemExit(main())
