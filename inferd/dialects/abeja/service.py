"""One ABEJA model: a request in, an `Answer` out, the same for HTTP, run-local and batch runs.

`AbejaModel.answer` is synchronous user code. `AbejaModel.respond` runs it so requests are served
concurrently and a slow handler never blocks the event loop (ABEJA's runtime served one at a time and
cut requests off at 30 s; inferd does neither): in a thread, or on the loop for the small JSON
requests of a handler that has shown it answers them in well under a millisecond (`AdaptiveOffload`),
which saves the thread hop that would otherwise cost more than the handler.

Over V2 a JSON handler is a model with one BYTES input
``json`` (each element a JSON document) and one BYTES output ``json`` (each element its answer).
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar, NamedTuple
from urllib.parse import quote

import numpy as np
import orjson

from inferd import __version__
from inferd.core import errors
from inferd.core.model import Model, PredictInThread
from inferd.core.offload import in_thread
from inferd.core.settings import DEFAULT_MAX_IMAGE_PIXELS
from inferd.core.types import Tensors, TensorSpec
from inferd.dialects.abeja import media, responses
from inferd.dialects.abeja.context import legacy_context, runtime_context
from inferd.dialects.abeja.exceptions import InvalidInput
from inferd.dialects.abeja.handler import Handler, load_handler
from inferd.dialects.abeja.request import build_request
from inferd.dialects.abeja.responses import Answer, HandlerResultError
from inferd.protocols.forms import DEFAULT_UPLOAD_LIMITS, UploadLimits

logger = logging.getLogger("inferd.abeja")

RUNTIME_METHODS = ("GET", "POST", "PUT")
#: What Go's mime.ParseMediaType accepts, near enough: type/subtype, then parameters.
MEDIA_TYPE = re.compile(r"^\s*[\w!#$&^.+-]+/[\w!#$&^.+-]+\s*(;.*)?$")
#: Environment variable → answer header, sent when the variable is set (ids of the platform deployment).
ID_HEADERS = {
    "ABEJA_MODEL_ID": "X-Abeja-Model-Id",
    "ABEJA_MODEL_VERSION": "X-Abeja-Model-Version",
    "ABEJA_DEPLOYMENT_ID": "X-Abeja-Deployment-Id",
    "ABEJA_SERVICE_ID": "X-Abeja-Service-Id",
}
JSON_TENSOR = "json"
#: Handlers running at once in threads (anyio's default too); more requests wait in the queue.
HANDLER_THREADS = 40
#: Larger bodies, and images, videos and forms, always go to a thread: decoding them takes time.
INLINE_BODY_LIMIT = 64 * 1024


class Call(NamedTuple):
    """One request as the handler's world sees it; ``body`` is a file for run-local and batch runs."""

    method: str
    content_type: str | None
    headers: Iterable[tuple[str, str]]
    body: bytes | Path
    query: bytes = b""


class AbejaModel(Model):
    platform: ClassVar[str] = "abeja"
    user_threads: ThreadPoolExecutor
    inputs = (TensorSpec(JSON_TENSOR, "BYTES", (-1,)),)
    outputs = (TensorSpec(JSON_TENSOR, "BYTES", (-1,)),)

    def __init__(
        self,
        target: str,
        style: str = "auto",
        max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
        max_video_seconds: float = 3600.0,
        uploads: UploadLimits = DEFAULT_UPLOAD_LIMITS,
        predict_in_thread: PredictInThread = "auto",
    ) -> None:
        self.target, self.style, self.max_image_pixels = target, style, max_image_pixels
        self.max_video_seconds, self.uploads = max_video_seconds, uploads
        self.predict_in_thread = True if predict_in_thread is True else "auto"
        self.user_threads = ThreadPoolExecutor(HANDLER_THREADS, thread_name_prefix="abeja-handler")

    def load(self) -> None:
        self.handler: Handler = load_handler(self.target, self.style)
        self.context = runtime_context()
        self.headers = _platform_headers()
        logger.info("handler %s loaded (%s style)", self.handler.target, self.handler.style)

    def unload(self) -> None:
        self.user_threads.shutdown(wait=False, cancel_futures=True)

    async def respond(self, call: Call) -> Answer:
        """`answer` off the event loop, or on it for quick JSON requests (see the module's docstring)."""
        if _may_run_inline(call):
            return await self.call_user(self.answer, call)
        return await in_thread(self.user_threads, self.answer, call)

    def answer(self, call: Call) -> Answer:
        if self.handler.style == "18.10":
            return self._legacy(call)
        answer = self._runtime(call)
        return Answer(answer.status, answer.body, answer.content_type, (*answer.headers, *self.headers))

    def _legacy(self, call: Call) -> Answer:
        """18.10: decode the body into the input iterator, collect what the generator yields."""
        inputs: Any = None
        try:
            inputs = media.decode_inputs(
                call.body,
                call.content_type,
                max_image_pixels=self.max_image_pixels,
                max_video_seconds=self.max_video_seconds,
            )
            context = legacy_context(call.method, call.headers, call.query.decode("latin-1"))
            return responses.from_yields(list(self.handler.function(inputs, context)))
        except media.MediaError as exc:
            return responses.error_answer(InvalidInput(str(exc)))
        except InvalidInput as exc:
            return responses.error_answer(exc)
        except Exception as exc:
            logger.exception("handler %s failed", self.handler.target)
            return responses.error_answer(exc)
        finally:
            close = getattr(inputs, "close", None)
            if close is not None:
                close()

    def _runtime(self, call: Call) -> Answer:
        """19.04+: build the request object, turn the returned dict into the answer."""
        content_type = call.content_type or ""
        if call.method not in RUNTIME_METHODS or (
            call.method != "GET" and not MEDIA_TYPE.match(content_type)
        ):
            return responses.unsupported_content_type(content_type)
        body = call.body.read_bytes() if isinstance(call.body, Path) else call.body
        try:
            request = build_request(call.method, content_type, call.headers, body, call.query, self.uploads)
        except InvalidInput as exc:
            return Answer(400, orjson.dumps({"status": str(exc)}), "application/json")
        except errors.PayloadTooLarge as exc:
            return Answer(413, orjson.dumps({"status": exc.message}), "application/json")
        try:
            return responses.from_return_value(self.handler.function(request, self.context))
        except Exception:
            logger.exception("ERROR: unexpected error occurred in user model.")
            return responses.UNEXPECTED_ERROR
        finally:
            request.close()

    def predict(self, inputs: Tensors) -> Tensors:
        """V2: each element of ``json`` posted as an application/json body."""
        answers = []
        for document in inputs[JSON_TENSOR].ravel():
            body = document if isinstance(document, bytes) else str(document).encode()
            answer = self.answer(Call("POST", "application/json", [], body))
            if answer.status >= 500:
                raise HandlerResultError(answer.body.decode("utf-8", "replace"))
            if answer.status >= 400:
                raise errors.InvalidInput(answer.body.decode("utf-8", "replace"))
            answers.append(answer.body)
        return {JSON_TENSOR: np.array(answers, dtype=object)}


def _may_run_inline(call: Call) -> bool:
    """A small body of a JSON or text kind (or none): what a handler answers fast if it ever does."""
    if isinstance(call.body, Path) or len(call.body) > INLINE_BODY_LIMIT:
        return False
    return _quick_kind(call.content_type)


@functools.lru_cache(maxsize=256)
def _quick_kind(content_type: str | None) -> bool:
    kind = (content_type or "").partition("/")[0].strip().lower()
    return kind in ("", "application", "text") and "multipart" not in (content_type or "")


def _platform_headers() -> tuple[tuple[str, str], ...]:
    """The headers ABEJA's proxy added to every 19.04 answer."""
    headers = [
        ("X-Abeja-Sys-Meta-Proxy-Version", __version__),
        ("X-Abeja-Sys-Meta-Runtime-Version", __version__),
    ]
    for variable, header in ID_HEADERS.items():
        value = os.environ.get(variable)
        if value:
            headers.append((header, quote(value, safe="")))
    return tuple(headers)
