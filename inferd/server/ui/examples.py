"""What the try-it page's form starts from (issue 43, "Pictures"): the model's own example when its
project has one (``request.json`` or ``sample.json`` beside the model, as ``examples/iris`` and every
``inferd init`` scaffold ship), else the last request this process answered for it without error
(`inferd.core.dataplane.DataPlane.last_inputs`, V2 only), else the zeros of `TryForm`'s own example.

The file is read when the page asks (so an edited example shows at once), at most `MAX_EXAMPLE`
bytes; one that is not JSON, or does not fit the form, is skipped, never an error of the page."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from inferd.core.importer import split_target
from inferd.core.types import Tensors
from inferd.dialects.base import TryForm

NAMES = ("request.json", "sample.json")
MAX_EXAMPLE = 64 * 1024


def project_folder(target: str) -> Path:
    """The folder of the served project: the target's own folder (a directory, or a file's parent),
    else the working directory (``inferd serve`` of a project changes into it first)."""
    path = Path(split_target(target)[0]) if target else Path.cwd()
    if path.is_dir():
        return path
    if path.is_file():
        return path.parent
    return Path.cwd()


def own_example(folder: Path) -> tuple[str, Any] | None:
    """(file name, content) of the project's example, if it has one that is JSON."""
    for name in NAMES:
        path = folder / name
        try:
            if not path.is_file() or path.stat().st_size > MAX_EXAMPLE:
                continue
            return name, json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
    return None


def _nested(entry: dict[str, Any]) -> Any:
    """A V2 request input's data in its shape (the form takes nested lists)."""
    data, shape = entry.get("data"), entry.get("shape")
    if isinstance(shape, list) and isinstance(data, list):
        try:
            return np.array(data, dtype=object).reshape(shape).tolist()
        except ValueError:
            return data
    return data


def fitted(form: TryForm, example: Any) -> TryForm | None:
    """``form`` starting from ``example`` (a V2 request, or a document of named values), or None when
    the example does not fit it."""
    if form.kind == "v2" and not form.fields:
        return replace(form, example=example) if isinstance(example, dict) and "inputs" in example else None
    if form.kind == "v2":
        names = [str(spec["name"]) for spec in form.fields]
        values: dict[str, Any] = {}
        if isinstance(example, dict) and isinstance(example.get("inputs"), list):
            inputs = [i for i in example["inputs"] if isinstance(i, dict)]
            by_name = {str(i.get("name")): _nested(i) for i in inputs}
            if set(names) <= set(by_name):
                values = {name: by_name[name] for name in names}
            elif len(inputs) == len(names):  # other names, as many: in order
                values = {name: _nested(i) for name, i in zip(names, inputs, strict=True)}
        elif isinstance(example, dict) and set(names) <= set(example):
            values = {name: example[name] for name in names}
        return replace(form, example=values) if values else None
    if form.kind in ("json", "body"):
        return replace(form, example=example)
    if form.kind == "fields" and isinstance(example, dict):
        fields = tuple(
            {**spec, "default": example[spec["name"]]}
            if spec.get("name") in example and spec.get("type") != "file"
            else spec
            for spec in form.fields
        )
        return replace(form, fields=fields)
    return None


def from_last(form: TryForm, inputs: Tensors) -> TryForm | None:
    """``form`` starting from the inputs of the model's last answered V2 request."""
    if form.kind != "v2":
        return None
    listed = [{"name": name, "data": np.asarray(value).tolist()} for name, value in inputs.items()]
    if not form.fields:
        shaped = [
            {**entry, "shape": list(np.shape(value)), "datatype": _datatype(value)}
            for entry, value in zip(listed, inputs.values(), strict=True)
        ]
        return replace(form, example={"inputs": shaped})
    return fitted(form, {"inputs": listed})


def _datatype(value: Any) -> str:
    kind = np.asarray(value).dtype
    return {"f": "FP32" if kind.itemsize <= 4 else "FP64", "i": "INT64", "u": "UINT64", "b": "BOOL"}.get(
        kind.kind, "BYTES"
    )


def prefilled(form: TryForm, target: str, last: Tensors | None) -> tuple[TryForm, str]:
    """``form`` with the best example there is, and where it came from (shown on the page)."""
    found = own_example(project_folder(target))
    if found is not None:
        filled = fitted(form, found[1])
        if filled is not None:
            return filled, found[0]
    if last is not None:
        filled = from_last(form, last)
        if filled is not None:
            return filled, "the last request answered"
    return form, "zeros"
