"""Legacy ``<method>_rest`` / ``<method>_grpc`` methods: deprecated, but they come first."""

import json


class Legacy:
    def predict(self, X, names, meta=None):
        raise AssertionError("predict_rest and predict_grpc take priority")

    def predict_rest(self, request):
        if request.get("strData") == "accepted":  # status.code is the HTTP status, as for predict_raw
            return {"status": {"code": 202, "info": "queued"}, "strData": "later"}
        return {"jsonData": {"legacy": "rest", "got": request}}

    def predict_grpc(self, request):
        return {"strData": f"grpc:{request.strData}"}

    def transform_input_rest(self, request):
        # Answers gRPC too: beyond predict, seldon-core picks <method>_rest first whatever the protocol.
        return {"strData": f"rest got {type(request).__name__}"}

    def send_feedback_grpc(self, feedback):
        # The Feedback message, on REST too (there is no send_feedback_rest); None is an empty answer.
        return {"strData": f"grpc:{feedback.reward}"} if feedback.reward else None


class LegacyFeedback:
    """send_feedback_rest comes before send_feedback_grpc, on gRPC too."""

    def send_feedback_rest(self, text):
        return {"jsonData": {"rest": json.loads(text)}}

    def send_feedback_grpc(self, feedback):
        raise AssertionError("send_feedback_rest takes priority")
