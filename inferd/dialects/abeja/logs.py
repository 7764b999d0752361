"""ABEJA's JSON log lines, so log collectors written for the platform's proxy read inferd's.

``timestamp`` is local time with milliseconds and a numeric offset; ``log_level`` uses the proxy's
names (``WARN``); the platform ids come from the environment; access lines carry ``log_type``,
``http_method``, ``http_status``, ``elapsed_microsecs`` and the request and response times.
"""

from __future__ import annotations

import datetime
import logging
import os
import traceback
from typing import Any

import orjson

from inferd import __version__
from inferd.core.context import request_id

LEVELS = {"WARNING": "WARN", "CRITICAL": "FATAL"}
#: Environment variable → log field, added to every line when the variable is set.
ID_FIELDS = {
    "ABEJA_SERVICE_ID": "service_id",
    "ABEJA_ORGANIZATION_ID": "organization_id",
    "ABEJA_DEPLOYMENT_ID": "deployment_id",
    "ABEJA_RUN_ID": "run_id",
    "TRAINING_JOB_ID": "training_job_id",
}
ACCESS_LOGGER = "inferd.access"


def _timestamp(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds).astimezone().isoformat(timespec="milliseconds")


class AbejaFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__()
        self.ids = {field: os.environ[var] for var, field in ID_FIELDS.items() if os.environ.get(var)}

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "timestamp": _timestamp(record.created),
            "log_level": LEVELS.get(record.levelname, record.levelname),
            "message": record.getMessage(),
            "version": __version__,
        }
        current = request_id.get()
        if current is not None:
            line["request_id"] = current
        line.update(self.ids)
        if record.name == ACCESS_LOGGER:
            line.update(_access_fields(record))
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            line["exc_info"] = {
                "type": type(error).__name__,
                "error": str(error),
                "traceback": traceback.format_exception(error),
            }
        return orjson.dumps(line, default=str).decode()


def _access_fields(record: logging.LogRecord) -> dict[str, Any]:
    elapsed = float(getattr(record, "duration_ms", 0.0)) / 1000
    return {
        "log_type": "access_log",
        "http_method": getattr(record, "method", None),
        "http_status": getattr(record, "status", None),
        "elapsed_microsecs": round(elapsed * 1_000_000),
        "request_timestamp": _timestamp(record.created - elapsed),
        "response_timestamp": _timestamp(record.created),
    }
