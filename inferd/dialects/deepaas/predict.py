"""DEEPaaS's predict route (spec §4-§6), ``POST <base>/v2/models/<name>/predict/``: the hot route,
a bare endpoint (`inferd.protocols.asgi`) of one model on a fixed path, so the server calls it
directly. It decodes the arguments, enters the data plane, calls ``predict`` and encodes the answer
as DEEPaaS did: JSON (``{"status": "OK", "predictions": ...}`` or the model's response schema), or
the raw type the ``accept`` argument asks for; errors as DEEPaaS's text bodies.
"""

from __future__ import annotations

import logging
from typing import Any

from marshmallow import ValidationError
from starlette.requests import Request
from starlette.types import Receive, Scope

from inferd.core.dataplane import DataPlane, ModelCall
from inferd.core.errors import InferdError
from inferd.dialects.deepaas import responses, uploads
from inferd.dialects.deepaas.arguments import ACCEPT, ANY_TYPE, Parsed, parse_or_error
from inferd.dialects.deepaas.model import DeepaasModel
from inferd.protocols.asgi import Answer, BareEndpoint
from inferd.protocols.forms import UploadLimits
from inferd.protocols.status import error_headers, status_of

logger = logging.getLogger("inferd.deepaas")

PROTOCOL = "deepaas"
METHODS = ("POST",)
#: ``accept`` values answered as JSON.
JSON_ACCEPT = ("application/json", ANY_TYPE)
NOT_IMPLEMENTED = responses.text_answer(501)


class Predict(BareEndpoint):
    """The predict route of model ``name``. Any method but POST is 405 (HEAD too, as in aiohttp), then
    402 when predict routes are disabled; neither reaches the data plane. A model that is not ready
    raises from the data plane, for the app's error handlers, and is not counted."""

    def __init__(self, dataplane: DataPlane, name: str, enabled: bool, upload_limits: UploadLimits) -> None:
        self.dataplane, self.name, self.upload_limits = dataplane, name, upload_limits
        self.not_allowed = responses.method_not_allowed_answer(METHODS)
        self.disabled = None if enabled else responses.text_answer(402)

    async def answer(self, scope: Scope, receive: Receive) -> Answer:
        if scope["method"] not in METHODS:
            return self.not_allowed
        if self.disabled is not None:
            return self.disabled
        with self.dataplane.call(self.name, PROTOCOL, DeepaasModel) as call:
            answer = await self.predict(call, Request(scope, receive))
            call.ok = answer.status < 400
            return answer

    async def predict(self, call: ModelCall[DeepaasModel], request: Request) -> Answer:
        """The arguments parsed (webargs' locations need the `Request`), ``predict`` called within
        the model's gate, and its output encoded; uploaded files' copies are removed whatever
        happens."""
        model = call.model
        if not model.has("predict"):
            return NOT_IMPLEMENTED
        parsed = await parse_or_error(request, model.predict_args, self.upload_limits)
        if not isinstance(parsed, Parsed):
            return parsed
        try:
            output = await call.run(lambda: model.call_user(model.run_predict, parsed.values))
        except InferdError as exc:  # shed (503) or timed out (504)
            return responses.text_answer(status_of(exc).http, exc.message, error_headers(exc))
        except Exception as exc:
            return _failed(model, exc)
        finally:
            uploads.remove(parsed.temp_files)
        return encode(model, parsed.values, output)


def _failed(model: DeepaasModel, exc: Exception) -> Answer:
    """Model code raised: a web framework's HTTP exception keeps its status, anything else is 500."""
    answer = responses.http_exception_answer(exc)
    if answer is None:
        logger.error("model %s failed to predict", model.entry_name, exc_info=exc)
        return responses.INTERNAL_ERROR
    return answer


def encode(model: DeepaasModel, values: dict[str, Any], output: Any) -> Answer:
    """``output`` as the client asked for it: the raw type of a non-JSON ``accept`` argument, else
    JSON, checked against the model's response schema when it has one."""
    wanted = values.get(ACCEPT) if ACCEPT in model.predict_args.fields else None
    if wanted and wanted not in JSON_ACCEPT:
        return _raw(model, output, str(wanted))
    if model.schema is None:
        return _json(model, {"status": "OK", "predictions": output}, output)
    problem = _schema_problem(model, output)
    return _json(model, output, output) if problem is None else responses.text_answer(500, problem)


def _raw(model: DeepaasModel, output: Any, wanted: str) -> Answer:
    answer = responses.raw_answer(output, wanted)
    if answer is None:
        logger.error("model %s answered %s for accept %s", model.entry_name, type(output).__name__, wanted)
        return responses.INTERNAL_ERROR
    return answer


def _schema_problem(model: DeepaasModel, output: Any) -> str | None:
    """What the client reads when ``output`` does not match the response schema; None when it does."""
    try:
        model.check_output(output)
    except ValidationError as exc:
        logger.error("model %s answer does not match its schema: %s", model.entry_name, exc.messages)
        return responses.SCHEMA_FAILED
    except Exception:
        logger.exception("validating the answer of model %s failed", model.entry_name)
        return responses.SCHEMA_CRASHED
    return None


def _json(model: DeepaasModel, body: Any, output: Any) -> Answer:
    """``body`` as JSON; a plain 500 when the model's ``output`` in it is not JSON (an open file is
    closed, as no one else will)."""
    try:
        return responses.json_answer(body)
    except TypeError:
        logger.error("model %s answered %s, which is not JSON", model.entry_name, type(output).__name__)
        close = getattr(output, "close", None)
        if callable(close):
            close()
        return responses.INTERNAL_ERROR
