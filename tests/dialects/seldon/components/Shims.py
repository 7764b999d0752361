"""A component written against seldon-core's helper modules: it builds its answers with
``seldon_core.utils``, counts with ``seldon_core.metrics`` and reads gRPC messages as
``seldon_core.proto.prediction_pb2`` types, as components written for seldon-core 1.18 do."""

import numpy as np
from seldon_core.metrics import create_gauge, create_timer, validate_metrics
from seldon_core.proto import prediction_pb2
from seldon_core.user_model import SeldonComponent
from seldon_core.utils import (
    construct_response,
    construct_response_json,
    extract_request_parts_json,
    feedback_to_json,
    get_data_from_proto,
    get_meta_from_proto,
    json_to_seldon_message,
    seldon_message_to_json,
)


class Shims(SeldonComponent):
    def tags(self):
        return {"component": "shims"}

    def class_names(self):
        return ["low", "high"]

    def feature_names(self):
        return ["x", "y"]

    def predict_raw(self, request):
        """Doubles the features: REST hands over the JSON message, gRPC the protobuf one."""
        is_proto = isinstance(request, prediction_pb2.SeldonMessage)
        message = request if is_proto else json_to_seldon_message(request)
        features = get_data_from_proto(message)
        # Not a COUNTER: through protobuf its type is the enum's default and vanishes from the JSON.
        metrics = [create_gauge("shim_rows", len(features)), create_timer("shim_time", 2.5)]
        assert validate_metrics(metrics)
        answer = construct_response(
            self, False, message, features * 2, get_meta_from_proto(message), metrics, {"proto": is_proto}
        )
        return answer if is_proto else seldon_message_to_json(answer)

    def transform_input_raw(self, request):
        """Adds one, keeping integers (REST only: the JSON path)."""
        features, meta, _, _ = extract_request_parts_json(request)
        return construct_response_json(self, True, request, features + 1, meta)

    def send_feedback_raw(self, feedback):
        document = feedback_to_json(feedback)
        reward = np.array([[feedback.reward, len(document)]])
        return seldon_message_to_json(construct_response(self, False, feedback.request, reward))
