"""JSON log lines on stderr, each naming the request it belongs to.

Two line formats: inferd's own, and ABEJA's (for ABEJA handlers, whose log collectors expect the
platform's fields). Formatters are import strings so a format's module loads only when chosen.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import orjson

from inferd.core.context import request_id
from inferd.core.importer import import_from_string
from inferd.core.settings import ServerSettings

_RESERVED = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "color_message"}


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        current = request_id.get()
        if current is not None:
            line["request_id"] = current
        line.update({key: value for key, value in vars(record).items() if key not in _RESERVED})
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


FORMATTERS = {
    "inferd": "inferd.server.logging:JSONFormatter",
    "abeja": "inferd.dialects.abeja.logs:AbejaFormatter",
}


def log_format(settings: ServerSettings) -> str:
    """The chosen format; ``auto`` is ABEJA's for the ABEJA dialect, inferd's otherwise."""
    if settings.log_format != "auto":
        return settings.log_format
    return "abeja" if settings.dialect == "abeja" else "inferd"


def configure_logging(level: str, line_format: str = "inferd") -> None:
    """Route inferd's, uvicorn's and grpc's loggers to one JSON handler on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(import_from_string(FORMATTERS[line_format])())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
    logging.getLogger("uvicorn.access").disabled = True
    # httpx (a graph's calls to its remote nodes) logs every request at INFO: one line per node call.
    logging.getLogger("httpx").setLevel(max(logging.WARNING, root.level))
