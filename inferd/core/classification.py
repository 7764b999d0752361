"""Triton's classification extension: an output asked for with the ``classification`` parameter
(REST ``parameters: {classification: K}``, tritonclient.grpc's ``class_count=K``) is answered as its
top K classes, BYTES strings ``"score:index"`` or ``"score:index:label"``, highest score first.

A batched model's output (first dimension -1) is classified row by row (shape ``[rows, K]``), any
other output as one flat tensor (shape ``[K]``); K beyond the classes is the classes. Labels are the
model's own (a ``labels`` attribute: a list of strings, index i naming class i) or the lines of a
``labels.txt`` in its folder (or the folder above a version's), read once per change of the file
and held to `MAX_LABELS_BYTES`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from inferd.core.errors import InvalidInput
from inferd.core.types import ParameterValue

LABELS_FILE = "labels.txt"
#: The largest labels file read (a million classes of short names fit).
MAX_LABELS_BYTES = 16 * 1024 * 1024


def class_count(output: str, value: ParameterValue) -> int:
    """The K of an output's ``classification`` parameter, or InvalidInput."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(
            f"output '{output}': classification must be a whole number of classes of at least 1, "
            f"not {value!r}"
        )
    return value


def classify(output: str, array: Any, count: int, rows: bool, labels: Sequence[str] | None) -> Any:
    """The top ``count`` classes of ``array`` as Triton's strings (an object array of bytes)."""
    values = np.asarray(array)
    if values.dtype.kind not in "biuf":
        raise InvalidInput(f"output '{output}' is {values.dtype}, not scores a classification can rank")
    by_row = rows and values.ndim >= 1
    table = (
        values.reshape(values.shape[0], int(np.prod(values.shape[1:]))) if by_row else values.reshape(1, -1)
    )
    count = min(count, table.shape[1])
    # stable: equal scores keep the order of their indices
    order = np.argsort(-table.astype(np.float64), axis=1, kind="stable")[:, :count]
    answer = np.empty(order.shape, dtype=object)
    for row in range(order.shape[0]):
        for column, index in enumerate(order[row]):
            text = f"{float(table[row, index]):f}:{index}"
            if labels is not None and index < len(labels):
                text += f":{labels[index]}"
            answer[row, column] = text.encode()
    return answer if by_row else answer.reshape(count)


def labels_of(model: Any, source: str) -> Sequence[str] | None:
    """The class names of a model: its ``labels`` attribute (or its batching wrapper's inner
    model's), else the ``labels.txt`` of its folder ``source`` or of the folder above it."""
    for holder in (model, getattr(model, "inner", None)):
        own = getattr(holder, "labels", None)
        if isinstance(own, (list, tuple)) and all(isinstance(label, str) for label in own):
            return own
    if not source or "://" in source:
        return None
    folder = Path(source)
    for candidate in (folder / LABELS_FILE, folder.parent / LABELS_FILE):
        try:
            stat = candidate.stat()
        except OSError:
            continue
        if candidate.is_file():
            return _read_labels(str(candidate), stat.st_mtime_ns, stat.st_size)
    return None


@functools.lru_cache(maxsize=64)
def _read_labels(path: str, mtime_ns: int, size: int) -> tuple[str, ...] | None:
    """The lines of a labels file (None: too large or not text), cached by its path and change."""
    if size > MAX_LABELS_BYTES:
        return None
    try:
        with open(path, "rb") as file:
            text = file.read(MAX_LABELS_BYTES + 1).decode()
    except (OSError, UnicodeDecodeError):
        return None
    return tuple(line.strip() for line in text.splitlines())
