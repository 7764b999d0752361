"""Cortex 0.12-0.25 projects with predictor classes, written as each release's docs showed them."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression


def iris_pickle(path: Path) -> None:
    """The sklearn iris classifier pickled, as Cortex's python-predictor examples loaded it."""
    data = load_iris()
    model = LogisticRegression(max_iter=1000).fit(data.data.astype(np.float32), data.target)
    path.write_bytes(pickle.dumps(model))


#: 0.12: a deployment, ``kind: api``, a ``predictor`` block of ``type: python`` with ``config``.
V12 = {
    "cortex.yaml": """
        - kind: deployment
          name: iris

        - kind: api
          name: classifier
          predictor:
            type: python
            path: predictor.py
            config:
              model: model.pkl
          tracker:
            model_type: classification
    """,
    "predictor.py": """
        import pickle

        labels = ["setosa", "versicolor", "virginica"]


        class PythonPredictor:
            def __init__(self, config):
                with open(config["model"], "rb") as file:
                    self.model = pickle.load(file)

            def predict(self, payload):
                measurements = [
                    payload["sepal_length"],
                    payload["sepal_width"],
                    payload["petal_length"],
                    payload["petal_width"],
                ]
                label_id = self.model.predict([measurements])[0]
                return labels[label_id]
    """,
}

#: 0.17: a list of APIs without ``kind``, an ONNX predictor class, ``model`` in the block, ``endpoint``.
V17 = {
    "cortex.yaml": """
        - name: iris-onnx
          endpoint: /iris/onnx
          predictor:
            type: onnx
            path: predictor.py
            model: iris.onnx
            config:
              labels: [setosa, versicolor, virginica]
          monitoring:
            model_type: classification
    """,
    "predictor.py": """
        class ONNXPredictor:
            def __init__(self, onnx_client, config):
                self.client = onnx_client
                self.labels = config["labels"]

            def predict(self, payload):
                model_input = [
                    payload["sepal_length"],
                    payload["sepal_width"],
                    payload["petal_length"],
                    payload["petal_width"],
                ]
                prediction = self.client.predict(model_input)
                return self.labels[prediction[0][0]]
    """,
}

#: 0.25: ``kind: RealtimeAPI``, ``networking.endpoint``, ``env``, ``python_path``, an ``image`` (ignored),
#: ``predict(payload, query_params, headers)`` answering by the payload's type, ``post_predict``.
V25 = {
    "cortex.yaml": """
        - name: echo
          kind: RealtimeAPI
          predictor:
            type: python
            path: src/predictor.py
            python_path: src
            config:
              greeting: hello
            env:
              ECHO_SUFFIX: "!"
            image: quay.io/cortexlabs/python-predictor-cpu:0.25.0
            threads_per_process: 1
          networking:
            endpoint: /v1/echo
        - name: iris
          kind: RealtimeAPI
          predictor:
            type: onnx
            path: src/onnx_predictor.py
            model_path: models/iris.onnx
        - name: multi
          kind: RealtimeAPI
          predictor:
            type: onnx
            path: src/multi.py
            models:
              paths:
                - name: flat
                  model_path: models/iris.onnx
                - name: versioned
                  model_path: models/iris-versions
              cache_size: 2
              disk_cache_size: 2
        - name: pickled
          kind: RealtimeAPI
          predictor:
            type: python
            path: src/pickled.py
            model_path: model.pkl
    """,
    "src/multi.py": """
        class ONNXPredictor:
            def __init__(self, onnx_client, config):
                self.client = onnx_client

            def predict(self, payload, query_params):
                name = query_params.get("model")
                labels, _ = self.client.predict([payload["row"]], name)
                return {"model": name, "label": int(labels[0])}
    """,
    "src/pickled.py": """
        import pickle


        class PythonPredictor:
            def __init__(self, config, python_client):
                self.client = python_client
                self.loads = 0

            def load_model(self, model_path):
                self.loads += 1
                with open(model_path, "rb") as file:
                    return pickle.load(file)

            def predict(self, payload):
                label = self.client.get_model().predict([payload["row"]])[0]
                return {"label": int(label), "loads": self.loads}
    """,
    ".env": """
        # read by every API of the project
        export ECHO_PREFIX='>'
    """,
    "src/words.py": """
        import os

        def shout(text):
            return os.environ["ECHO_PREFIX"] + text.upper() + os.environ["ECHO_SUFFIX"]
    """,
    "src/predictor.py": """
        from starlette.responses import Response
        from fastapi.exceptions import HTTPException

        from words import shout

        calls = []


        class PythonPredictor:
            def __init__(self, config):
                self.greeting = config["greeting"]

            def predict(self, payload, query_params, headers):
                if isinstance(payload, dict):
                    if "fail" in payload:
                        raise HTTPException(status_code=422, detail="fail: not a field I take")
                    if "crash" in payload:
                        raise ValueError("the predictor crashed")
                    return {"greeting": self.greeting, "payload": payload, "q": query_params.get("q"),
                            "header": headers.get("x-test"), "calls": len(calls)}
                if isinstance(payload, str):
                    return shout(payload)
                if isinstance(payload, bytes):
                    return payload[::-1]
                return Response(content="form " + payload["name"], media_type="text/csv", status_code=201)

            def post_predict(self, response, payload):
                calls.append(response)
    """,
    "src/onnx_predictor.py": """
        import numpy as np


        class ONNXPredictor:
            def __init__(self, onnx_client, config):
                self.client = onnx_client

            def predict(self, payload):
                batch = np.array(payload["rows"], dtype=np.float32)
                labels, _ = self.client.predict(batch)
                return labels.tolist()
    """,
}

#: 0.34-0.35: a ``handler:`` block and a ``Handler`` class answering POST and GET, its model loaded
#: through ``model_client`` from ``multi_model_reloading.path``.
V35 = {
    "cortex.yaml": """
        - name: handled
          kind: RealtimeAPI
          handler:
            type: python
            path: handler.py
            config:
              scale: 2
            multi_model_reloading:
              path: model.pkl
            shm_size: 1Gi
    """,
    "handler.py": """
        import pickle


        class Handler:
            def __init__(self, config, model_client, metrics_client):
                self.client, self.metrics = model_client, metrics_client
                self.scale = config["scale"]

            def load_model(self, model_path):
                with open(model_path, "rb") as file:
                    return pickle.load(file)

            def handle_post(self, payload):
                self.metrics.put_metric("calls", 1, {"api": "handled"})
                return {"label": int(self.client.get_model().predict([payload["row"]])[0])}

            def handle_get(self, query_params):
                return {"scale": self.scale, "q": query_params.get("q")}
    """,
}

#: 0.20+: a predictor whose constructor raises.
INIT_RAISES = {
    "cortex.yaml": """
        - name: broken
          kind: RealtimeAPI
          predictor:
            type: python
            path: predictor.py
    """,
    "predictor.py": """
        def load_weights():
            raise RuntimeError("weights.bin is missing")


        class PythonPredictor:
            def __init__(self, config):
                self.weights = load_weights()

            def predict(self, payload):
                return payload
    """,
}

#: Projects that must stop ``inferd serve`` with exit 2, and the message naming what is wrong.
BAD = {
    "no-class": (
        {
            "cortex.yaml": "- name: nope\n  predictor:\n    type: python\n    path: predictor.py\n",
            "predictor.py": "class Predictor:\n    pass\n",
        },
        "error: api nope: predictor predictor.py: class PythonPredictor: class is required but was not found",
    ),
    "bad-predict-args": (
        {
            "cortex.yaml": (
                "- name: args\n  kind: RealtimeAPI\n  predictor:\n    type: python\n    path: p.py\n"
            ),
            "p.py": (
                "class PythonPredictor:\n    def __init__(self, config):\n        pass\n"
                "    def predict(self, sample):\n        return 1\n"
            ),
        },
        "error: api args: predictor p.py: class PythonPredictor: function predict: expected arguments "
        "(payload (optional), query_params (optional), headers (optional), batch_id (optional)) "
        "but found (sample)",
    ),
    "batch-api": (
        {"cortex.yaml": "- name: jobs\n  kind: BatchAPI\n  predictor:\n    type: python\n    path: p.py\n"},
        "error: api jobs: kind: BatchAPI (Cortex 0.20+) is not supported yet; inferd serves SyncAPI and "
        "RealtimeAPI resources",
    ),
    "onnx-without-model": (
        {"cortex.yaml": "- name: m\n  kind: RealtimeAPI\n  predictor:\n    type: onnx\n    path: p.py\n"},
        "error: api m: predictor: model_path: key is required for the onnx predictor type",
    ),
}
