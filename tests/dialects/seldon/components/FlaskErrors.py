"""A model_error_handler blueprint, as Seldon's docs show it: the handler's own response is sent."""

from flask import Blueprint, jsonify


class UserCustomException(Exception):
    status_code = 402

    def __init__(self, message, application_error_code):
        Exception.__init__(self)
        self.message = message
        self.application_error_code = application_error_code

    def to_dict(self):
        return {
            "status": {
                "status": self.status_code,
                "message": self.message,
                "app_code": self.application_error_code,
            }
        }


class FlaskErrors:
    model_error_handler = Blueprint("error_handlers", __name__)

    @staticmethod
    @model_error_handler.app_errorhandler(UserCustomException)
    def handle_custom_error(error):
        response = jsonify(error.to_dict())
        response.status_code = error.status_code
        response.headers["X-Handled-By"] = "blueprint"
        return response

    def predict(self, X, names, meta=None):
        if X.size and X.ravel()[0] == 1:
            raise UserCustomException("custom failure", 1402)
        if X.size and X.ravel()[0] == 2:
            raise RuntimeError("not handled by the blueprint")
        return X
