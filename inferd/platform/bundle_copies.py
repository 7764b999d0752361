"""The artifact store's copy in object storage (``INFERD_ARTIFACT_STORE=s3://bucket/bundles/``): each
bundle uploaded once, as ``sha256/<hex>.tar.gz`` under the prefix, when it is first stored; fetched
into the local artifact folder (which is then its cache) when a service, run or download needs it
and this machine has not got it, e.g. a new data folder on another machine sharing the bucket.

The name is the digest of the content, so a fetched bundle is hashed before it is kept: an object
changed or corrupted in the store is refused, never unpacked."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from inferd.storage.errors import StorageError, StorageNotFound
from inferd.storage.locations import scheme
from inferd.storage.remote import Remote
from inferd.storage.upload import check_prefix, is_http, put

_CHUNK = 1 << 20


class BundleCopies:
    """Bundles under a storage prefix; ``check_seconds`` bounds the first request of each look."""

    def __init__(self, prefix: str, check_seconds: float = 10.0) -> None:
        if is_http(prefix):  # an http(s) server is written file by file but lists no prefix
            raise StorageError(prefix, "the artifact store needs object storage: use s3:// or gs://", "use")
        self.prefix = check_prefix(prefix)
        self.check_seconds = check_seconds

    def uri(self, hex: str) -> str:
        return f"{self.prefix}sha256/{hex}.tar.gz"

    def keep(self, path: Path, hex: str) -> None:
        """Upload the bundle at ``path`` unless the store has it already (same name, same bytes)."""
        uri = self.uri(hex)
        try:
            self._remote(uri).listing()
        except StorageNotFound:
            put(path, uri)

    def fetch(self, hex: str, into: Path) -> None:
        """The bundle as the new file ``into``, once its bytes hash to ``hex``: it appears whole and
        right or not at all. `StorageNotFound` if the store has no such bundle, `StorageError`
        naming the URI if it holds other bytes under that name."""
        uri = self.uri(hex)
        remote = self._remote(uri)
        listing = remote.listing()
        with tempfile.TemporaryDirectory(prefix=".tmp-", dir=into.parent) as scratch:
            remote.download(listing, Path(scratch))
            got = Path(scratch) / listing.files[0].relative
            found = _sha256(got)
            if found != hex:
                raise StorageError(
                    uri,
                    f"its bytes hash to sha256:{found}, not the digest it is named by: changed or "
                    "corrupted in the store, so refused; push the version again",
                )
            got.replace(into)

    def _remote(self, uri: str) -> Remote:
        return Remote(uri, scheme(uri) or "", self.check_seconds)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
