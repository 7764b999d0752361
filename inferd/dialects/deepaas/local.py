"""``inferd predict|train --dialect deepaas NAME --arg key=value --file field=path``: one call in this
process, as ``deepaas-cli`` makes it. Arguments go through the same fields as over HTTP; files are
copied to temporary files passed as `UploadedFile` and removed afterwards."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from marshmallow import ValidationError, fields

from inferd.dialects.deepaas import uploads
from inferd.dialects.deepaas.discovery import discover, entry_points
from inferd.dialects.deepaas.model import DeepaasModel
from inferd.dialects.deepaas.settings import DeepaasSettings
from inferd.dialects.deepaas.stand_in import uploaded_file
from inferd.dialects.deepaas.test_model import NAME as TEST_MODEL
from inferd.dialects.deepaas.training import date_text, shown_args


class LocalCallError(Exception):
    """What the command line gave cannot be called (unknown model, bad argument): exit 2."""


def load(name: str, settings: DeepaasSettings) -> DeepaasModel:
    """NAME is an entry point (or ``deepaas-test``), else a ``module:attr`` target."""
    if name == TEST_MODEL or name in entry_points():
        chosen = settings.model_copy(update={"model_name": name, "target": ""})
    else:
        chosen = settings.model_copy(update={"target": name, "name": name})
    loads = discover(chosen)
    served, load_entry = next(iter(loads.items()))
    model = DeepaasModel(served, load_entry, chosen.warm)
    model.load()
    return model


def pairs(given: list[str], what: str) -> list[tuple[str, str]]:
    found = []
    for item in given:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise LocalCallError(f"{what} '{item}' must be KEY=VALUE")
        found.append((key, value))
    return found


def call(model: DeepaasModel, method: str, args: list[str], files: list[str]) -> Any:
    """``predict`` answers the model's output; ``train`` a record like the HTTP one."""
    declared = model.predict_args if method == "predict" else model.train_args
    if not model.has(method):
        raise LocalCallError(f"model '{model.entry_name}' has no {method}()")
    raw: dict[str, Any] = {}
    for key, value in pairs(args, "--arg"):
        many = isinstance(declared.fields.get(key), fields.List)
        if many:
            raw.setdefault(key, []).append(value)
        else:
            raw[key] = value
    temp: list[str] = []
    try:
        for key, path in pairs(files, "--file"):
            raw[key] = _copy(key, Path(path), temp)
        try:
            values = declared.schema.load(raw)
        except ValidationError as exc:
            raise LocalCallError(f"invalid arguments: {exc.messages}") from None
        if method == "predict":
            return model.run_predict(values)
        started = datetime.now()
        output = model.user.train(**values)
        finished = datetime.now()
        return {
            "date": date_text(started),
            "args": shown_args(values),
            "status": "done",
            "uuid": uuid.uuid4().hex,
            "result": {
                "output": output,
                "finish_date": date_text(finished),
                "duration": str(finished - started),
            },
        }
    finally:
        uploads.remove(temp)


def _copy(field: str, source: Path, temp: list[str]) -> Any:
    if not source.is_file():
        raise LocalCallError(f"--file {field}: no such file {source}")
    handle = tempfile.NamedTemporaryFile(prefix="inferd-upload-", suffix=source.suffix, delete=False)
    with handle, source.open("rb") as original:
        shutil.copyfileobj(original, handle)
    temp.append(handle.name)
    return uploaded_file(field, handle.name, "application/octet-stream", source.name)
