"""Models from object storage: storage URIs (plain paths, ``file://``, ``s3://``, ``gs://``,
``http(s)://``) fetched into a local cache that the worker processes of a server share.

Importing this package loads no storage library: each remote backend (s3fs, gcsfs, fsspec's HTTP
filesystem) is imported when a URI of its scheme is first fetched, so a server of local models needs
none of inferd's storage extras. Nor does it load the cache: its names load on first use (PEP 562),
so what only asks `inferd.storage.locations` whether a target is remote (every ``serve``) stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferd.core.lazy import lazy_names

if TYPE_CHECKING:
    from inferd.storage.cache import Fetched, ModelCache
    from inferd.storage.errors import StorageError
    from inferd.storage.locations import is_remote, local_path

__all__ = ["Fetched", "ModelCache", "StorageError", "is_remote", "local_path"]

__getattr__ = lazy_names(
    __name__,
    {
        "Fetched": "inferd.storage.cache",
        "ModelCache": "inferd.storage.cache",
        "StorageError": "inferd.storage.errors",
        "is_remote": "inferd.storage.locations",
        "local_path": "inferd.storage.locations",
    },
)
