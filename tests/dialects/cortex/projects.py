"""Cortex projects for the tests, written as data: models built here, never downloaded."""

from __future__ import annotations

import textwrap
from pathlib import Path

import dill
import numpy as np
import onnx
from onnx import TensorProto, helper
from skl2onnx import convert_sklearn
from skl2onnx.common.data_types import FloatTensorType
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression

SETOSA = {"sepal_length": 5.2, "sepal_width": 3.6, "petal_length": 1.4, "petal_width": 0.3}
VIRGINICA = {"sepal_length": 6.7, "sepal_width": 3.0, "petal_length": 5.2, "petal_width": 2.3}
LABELS = "iris-setosa\niris-versicolor\niris-virginica\n"


def iris_onnx(path: Path) -> None:
    """LogisticRegression on sklearn's bundled iris; outputs: label and ZipMap probabilities."""
    data = load_iris()
    model = LogisticRegression(max_iter=1000).fit(data.data.astype(np.float32), data.target)
    converted = convert_sklearn(model, initial_types=[("float_input", FloatTensorType([None, 4]))])
    path.write_bytes(converted.SerializeToString())


def adder_onnx(path: Path) -> None:
    """sum = a + b over float tensors [None, 2]: the two-input model."""
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [None, 2]) for name in ("a", "b")]
    output = helper.make_tensor_value_info("sum", TensorProto.FLOAT, [None, 2])
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["sum"])], "adder", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString())


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    return folder


#: 0.8/0.9 layout: a deployment with three APIs; 2-argument handlers importing a sibling module.
V08 = {
    "cortex.yaml": """
        - kind: deployment
          name: iris
        - kind: api
          name: classifier
          model: models/iris.onnx
          request_handler: handlers/classifier.py
          tracker:
            model_type: classification
        - kind: api
          name: raw
          model: file://models/iris.onnx
          model_format: onnx
          compute: {min_replicas: 1, cpu: 200m}
        - kind: api
          name: adder
          model: models/adder.onnx
          tracker: {key: total, model_type: regression}
          request_handler: handlers/adder.py
    """,
    "features.py": """
        ORDER = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
    """,
    "handlers/classifier.py": """
        import numpy as np
        from cortex.lib.log import get_logger

        from features import ORDER

        logger = get_logger()
        LABELS = ["iris-setosa", "iris-versicolor", "iris-virginica"]


        def pre_inference(sample, metadata):
            if sample.get("boom"):
                raise ValueError("kaboom")
            if "as_text" in sample:
                return {metadata[0].name: np.array(sample["as_text"])}
            if "raw" in sample:
                return sample["raw"]
            logger.info("classifying %s", sample)
            return {metadata[0].name: [sample[key] for key in ORDER]}


        def post_inference(prediction, metadata):
            return LABELS[int(prediction[0][0])]
    """,
    "handlers/adder.py": """
        def post_inference(prediction, metadata):
            names = [m.name for m in metadata]
            return {"total": float(prediction[0].sum()), "sum": prediction[0], "outputs": names}
    """,
}

#: 0.10 layout: one API at a custom endpoint, 3-argument handlers reading a project file.
V10 = {
    "cortex.yaml": """
        - kind: api
          name: iris
          endpoint: /iris/classifier
          onnx:
            model: models/iris.onnx
            request_handler: handler.py
            python_path: src/
            metadata:
              label_key: label
          tracker: {key: label, model_type: classification}
    """,
    "labels.txt": LABELS,
    "src/shapes.py": """
        def row(sample):
            keys = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
            return [sample[key] for key in keys]
    """,
    "handler.py": """
        from cortex.lib.log import cx_logger

        from shapes import row

        with open("labels.txt") as f:
            LABELS = f.read().split()


        def pre_inference(sample, signature, metadata):
            return {signature[0].name: row(sample)}


        def post_inference(prediction, signature, metadata):
            cx_logger().info("outputs %s", [s.name for s in signature])
            return {metadata["label_key"]: LABELS[int(prediction[0][0])], "probabilities": prediction[1][0]}
    """,
    "requirements.txt": "this-package-does-not-exist-inferd==0.0.0\n",
}

#: 0.10 layout: a dill-pickled handler and a predictor; its requirements are already installed.
MISC = {
    "requirements.txt": "numpy\n",
    "cortex.yaml": """
        - kind: api
          name: pickled
          onnx:
            model: adder.onnx
            request_handler: handler.pickle
        - kind: api
          name: echo
          predictor:
            path: predictor.py
            model: adder.onnx
            metadata: {greeting: hello}
    """,
    "predictor.py": """
        import os

        STATE = {}


        def init(model_path, metadata):
            STATE["model"] = os.path.basename(model_path)


        def predict(sample, metadata):
            if sample == "fail":
                raise RuntimeError("no echo")
            return {"greeting": metadata["greeting"], "sample": sample, "model": STATE["model"]}
    """,
}

PICKLED_HANDLERS = """
def pre_inference(sample, signature, metadata):
    return {arg.name: [sample["x"], sample["y"]] for arg in signature}

def post_inference(prediction, signature, metadata):
    return {"doubled": prediction[0].tolist()}
"""


def pickled_handlers(path: Path) -> None:
    """Functions defined in a ``__main__`` namespace, so dill pickles them by value (as the client did)."""
    namespace: dict[str, object] = {"__name__": "__main__"}
    exec(PICKLED_HANDLERS, namespace)
    functions = {name: namespace[name] for name in ("pre_inference", "post_inference")}
    path.write_bytes(dill.dumps(functions, recurse=True))


BAD_SIGNATURE = {
    "cortex.yaml": """
        - kind: api
          name: bad
          onnx:
            model: adder.onnx
            request_handler: handler.py
    """,
    "handler.py": """
        def pre_inference(sample, extra):
            return sample
    """,
}

#: Handler files named like the libraries they (and inferd) import: ``handlers/onnx.py`` and a
#: ``sklearn.py`` at the project root, which is on sys.path. Each reports where its imports came from.
LIBRARY_NAMES = {
    "cortex.yaml": """
        - kind: api
          name: in-folder
          onnx:
            model: iris.onnx
            request_handler: handlers/onnx.py
        - kind: api
          name: at-root
          onnx:
            model: iris.onnx
            request_handler: sklearn.py
    """,
    "handlers/onnx.py": """
        import onnx
        import sklearn

        from features import ORDER


        def pre_inference(sample, signature, metadata):
            return [sample[key] for key in ORDER]


        def post_inference(prediction, signature, metadata):
            files = {"onnx": onnx.__file__, "sklearn": sklearn.__file__}
            return {"label": int(prediction[0][0]), "files": files, "name": __name__}
    """,
    "sklearn.py": """
        import onnx
        import sklearn

        from features import ORDER


        def pre_inference(sample, signature, metadata):
            return {signature[0].name: [sample[key] for key in ORDER]}


        def post_inference(prediction, signature, metadata):
            files = {"onnx": onnx.__file__, "sklearn": sklearn.__file__}
            return {"label": int(prediction[0][0]), "files": files, "name": __name__}
    """,
    "features.py": """
        ORDER = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
    """,
}

BAD_SYNTAX = {
    "cortex.yaml": """
        - kind: api
          name: bad
          onnx:
            model: adder.onnx
            request_handler: handlers/handler.py
    """,
    "handlers/handler.py": """
        def pre_inference(sample, signature, metadata)
            return sample
    """,
}

BAD_IMPORT = {
    "cortex.yaml": """
        - kind: api
          name: bad
          predictor:
            path: predictor.py
    """,
    "predictor.py": """
        import os

        import inferd_test_module_that_is_not_installed


        def predict(sample, metadata):
            return sample
    """,
}


def remote(uri: str) -> dict[str, str]:
    """An API whose model is in object storage, in the 0.8 layout (``.onnx``) or a 0.10 block."""
    if uri.endswith(".onnx"):
        return {
            "cortex.yaml": f"- kind: deployment\n  name: d\n- kind: api\n  name: remote\n  model: {uri}\n"
        }
    return {"cortex.yaml": f"- kind: api\n  name: remote\n  tensorflow:\n    model: {uri}\n"}


#: TensorFlow SavedModels (built by tf_models.py): the 0.8 layout with a version dir, a zip and a
#: two-input model, and the 0.10 layout with an explicit signature key. The handler is named
#: ``tensorflow.py``, which must not stand in for the library when inferd loads the models.
TF = {
    "cortex.yaml": """
        - kind: deployment
          name: tf
        - kind: api
          name: iris
          model: models/iris
          request_handler: handlers/tensorflow.py
          tracker: {key: label, model_type: classification}
        - kind: api
          name: pair
          model: models/pair
        - kind: api
          name: zipped
          model: models/iris.zip
          tf_signature_key: serving_default
          request_handler: handlers/tensorflow.py
        - kind: api
          name: described
          endpoint: /described
          tensorflow:
            model: models/iris
            signature_key: predict
            request_handler: handlers/described.py
            metadata: {note: from-config}
    """,
    "labels.txt": LABELS,
    "handlers/tensorflow.py": """
        with open("labels.txt") as f:
            LABELS = f.read().split()

        ORDER = ["sepal_length", "sepal_width", "petal_length", "petal_width"]


        def pre_inference(sample, metadata):
            if "raw" in sample:
                return sample["raw"]
            name = next(iter(metadata["predict"]["inputs"]))
            return {name: [[sample[key] for key in ORDER]]}


        def post_inference(prediction, metadata):
            return {"label": LABELS[int(prediction["class_ids"][0])], **prediction}
    """,
    "handlers/described.py": """
        def post_inference(prediction, signature, metadata):
            inputs = signature["predict"]["inputs"]
            return {
                "keys": sorted(signature),
                "input": inputs["x"],
                "method": signature["predict"]["methodName"],
                "note": metadata["note"],
            }
    """,
}

TF_UNKNOWN_SIGNATURE = {
    "cortex.yaml": """
        - kind: api
          name: tf
          tensorflow:
            model: models/iris
            signature_key: classify
    """,
}

TF_NO_SAVED_MODEL = {
    "cortex.yaml": """
        - kind: api
          name: tf
          tensorflow:
            model: export/
    """,
    "export/1/notes.txt": "not a model",
}

ONNX_SIGNATURE_KEY = {
    "cortex.yaml": """
        - kind: api
          name: adder
          model: adder.onnx
          tf_signature_key: predict
    """,
}
