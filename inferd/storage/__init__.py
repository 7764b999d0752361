"""Models from object storage: storage URIs (plain paths, ``file://``, ``s3://``, ``gs://``,
``http(s)://``) fetched into a local cache that the worker processes of a server share.

Importing this package loads no storage library: each remote backend (s3fs, gcsfs, fsspec's HTTP
filesystem) is imported when a URI of its scheme is first fetched, so a server of local models needs
none of inferd's storage extras.
"""

from __future__ import annotations

from inferd.storage.cache import Fetched, ModelCache
from inferd.storage.errors import StorageError
from inferd.storage.locations import is_remote, local_path

__all__ = ["Fetched", "ModelCache", "StorageError", "is_remote", "local_path"]
