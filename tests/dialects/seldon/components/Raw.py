"""Raw methods: answered verbatim (no names, no merging), a stub falling through, status from the body."""

from seldon_core.user_model import SeldonComponent, SeldonNotImplementedError


class Raw(SeldonComponent):
    def predict_raw(self, msg):
        if isinstance(msg, (bytes, str)):  # PAYLOAD_PASSTHROUGH: the body as it came
            return {"status": {"code": 202}} if msg == b"accepted" else msg[::-1]
        if hasattr(msg, "WhichOneof"):  # gRPC: the SeldonMessage itself
            reply = type(msg)(strData="raw grpc")
            reply.meta.metrics.add(key="raw_grpc_counter", value=3)  # a COUNTER: protobuf sends no type
            return reply
        if msg.get("strData") == "untyped":
            return {"strData": "untyped", "meta": {"metrics": [{"key": "raw_untyped", "value": 4}]}}
        if msg.get("strData") == "created":
            return {"status": {"code": 201}, "jsonData": {"made": True}}
        return {
            "jsonData": {"raw": msg.get("jsonData")},
            "meta": {"metrics": [{"type": "COUNTER", "key": "raw_counter", "value": 2}]},
        }

    def transform_input_raw(self, msg):
        raise SeldonNotImplementedError("use the high-level method")

    def transform_input(self, X, names, meta=None):
        return X * 10

    def route_raw(self, msg):
        tags = msg.get("meta", {}).get("tags", {})  # the whole request reaches route_raw, meta included
        return {"data": {"ndarray": [[tags.get("route", 1)]]}}

    def aggregate_raw(self, msgs):
        return {"jsonData": {"count": len(msgs if isinstance(msgs, list) else msgs["seldonMessages"])}}

    def send_feedback_raw(self, feedback):
        # The Feedback message, as upstream hands it over on REST as well as gRPC.
        if not feedback.reward:
            return None  # an empty SeldonMessage
        return {"jsonData": {"reward": feedback.reward, "puid": feedback.request.meta.puid}}

    def health_status_raw(self):
        return {"jsonData": {"raw": "health"}}
