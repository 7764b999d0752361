"""``model_error_handler``: a Flask Blueprint whose app-level error handlers answer user exceptions.

Seldon registered the blueprint on its Flask app, so a handler's response (status, headers, body) went
to the client unchanged. inferd registers it on a small Flask app of its own, used only to run those
handlers; Flask is imported only for user code that has such a blueprint.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger("inferd.seldon")


@dataclass(frozen=True)
class HandledError:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


class ErrorHandlers:
    def __init__(self, blueprint: Any) -> None:
        from flask import Flask

        self.app = Flask("inferd-seldon-error-handlers")
        self.app.register_blueprint(blueprint)

    def answer(self, exc: BaseException) -> HandledError | None:
        """The registered handler's response to ``exc``, or None when no handler takes it."""
        if not isinstance(exc, Exception):
            return None
        with self.app.test_request_context():
            try:
                try:
                    raise exc
                except Exception:
                    returned = self.app.handle_user_exception(exc)
            except Exception:
                return None  # Flask re-raises what no handler takes
            response = self.app.make_response(returned)
            headers = [(k, v) for k, v in response.headers.items() if k.lower() != "content-length"]
            return HandledError(response.status_code, headers, response.get_data())


def error_handlers(user: Any) -> ErrorHandlers | None:
    """The handlers of ``user.model_error_handler``, if it has one (and Flask is installed)."""
    blueprint = getattr(user, "model_error_handler", None)
    if blueprint is None:
        return None
    try:
        return ErrorHandlers(blueprint)
    except ImportError:
        logger.warning("model_error_handler is set but Flask is not installed; its handlers are not used")
        return None
