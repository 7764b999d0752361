"""Serve targets in object storage. What a command line, an ``inferd.yaml`` or a graph node names as
``s3://bucket/project/`` or ``s3://bucket/code/model.py:Class`` becomes its copy in the model cache,
the ``:Class`` kept, so the code that loads targets only ever sees local paths."""

from __future__ import annotations

from inferd.core.importer import split_target
from inferd.storage.cache import ModelCache
from inferd.storage.locations import is_remote, plain_target


def local_target(target: str, cache: ModelCache) -> str:
    """``target`` as this machine loads it: one in object storage (a file or a folder) fetched into
    ``cache``, a ``file://`` URI as the path it names, any other as it is."""
    if not is_remote(target):
        return plain_target(target)
    uri, attribute = split_target(target)
    return str(cache.fetch(uri).path) + (f":{attribute}" if attribute else "")
