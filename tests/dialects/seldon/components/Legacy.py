"""Legacy ``<method>_rest`` / ``<method>_grpc`` methods: deprecated, but they come first."""


class Legacy:
    def predict(self, X, names, meta=None):
        raise AssertionError("predict_rest and predict_grpc take priority")

    def predict_rest(self, request):
        if request.get("strData") == "accepted":  # status.code is the HTTP status, as for predict_raw
            return {"status": {"code": 202, "info": "queued"}, "strData": "later"}
        return {"jsonData": {"legacy": "rest", "got": request}}

    def predict_grpc(self, request):
        return {"strData": f"grpc:{request.strData}"}
