"""Serve targets in object storage. What a command line, an ``inferd.yaml`` or a graph node names as
``s3://bucket/project/`` or ``s3://bucket/code/model.py:Class`` becomes its copy in the model cache,
the ``:Class`` kept, so the code that loads targets only ever sees local paths."""

from __future__ import annotations

import logging
from pathlib import Path

from inferd.core.importer import split_target
from inferd.storage.cache import ModelCache
from inferd.storage.locations import is_remote, plain_target

logger = logging.getLogger("inferd.storage")

#: Model files that are Python pickles (scikit-learn's), whose loading runs code.
PICKLE_FILES = ("model.joblib", "model.pkl", "model.pickle")
PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")


def local_target(target: str, cache: ModelCache) -> str:
    """``target`` as this machine loads it: one in object storage (a file or a folder) fetched into
    ``cache``, a ``file://`` URI as the path it names, any other as it is."""
    if not is_remote(target):
        return plain_target(target)
    uri, attribute = split_target(target)
    path = cache.fetch(uri).path
    if _pickles(path):
        logger.warning(
            "%s holds a pickle (%s): loading it runs code of its own, as fetched from there; serve only "
            "files you trust",
            uri,
            ", ".join(sorted(found.name for found in _pickles(path))),
        )
    return str(path) + (f":{attribute}" if attribute else "")


def _pickles(path: Path) -> list[Path]:
    """The pickles a fetched file or folder serves as a model file (docs/runtimes.md): a file of
    their suffixes, or a folder's well-known ones."""
    if path.is_file():
        return [path] if path.suffix.lower() in PICKLE_SUFFIXES else []
    return [path / name for name in PICKLE_FILES if (path / name).is_file()]
