"""``s3://`` through s3fs, which reads endpoint, region and credentials through botocore exactly as
boto3 does (``AWS_ENDPOINT_URL``, ``AWS_PROFILE``, ``AWS_ACCESS_KEY_ID``...), so MinIO and other
S3-compatible stores work with the settings their users already have."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import s3fs
from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
)

from inferd.storage.backends import Backend, Explanation, said
from inferd.storage.errors import StorageDenied, StorageUnreachable

SETTINGS = "AWS_ENDPOINT_URL, AWS_REGION and the AWS credentials (read as boto3 reads them)"
#: botocore's own retries of a refused connection take ten seconds and more; the first request of a
#: fetch gives up sooner, and the transfers after it keep the retries the environment configures.
_QUICK_CONFIG = {"connect_timeout": 3, "retries": {"max_attempts": 2, "mode": "standard"}}


def filesystem(quick: bool) -> Any:
    if quick:
        return s3fs.S3FileSystem(skip_instance_cache=True, config_kwargs=_QUICK_CONFIG)
    return s3fs.S3FileSystem(skip_instance_cache=True)


def version(info: Mapping[str, Any]) -> str | None:
    """The ETag, and the VersionId of a versioned bucket."""
    parts = [str(info.get("ETag") or "").strip('"'), str(info.get("VersionId") or "")]
    return ":".join(part for part in parts if part) or None


def explain(exc: BaseException) -> Explanation | None:
    if isinstance(exc, NoCredentialsError):
        return StorageDenied, (
            "no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE "
            "or a role, as for boto3"
        )
    if isinstance(exc, EndpointConnectionError | ConnectTimeoutError):
        return StorageUnreachable, f"the S3 endpoint does not answer ({said(exc)}); check {SETTINGS}"
    if isinstance(exc, ClientError):
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        if status >= 500:  # after botocore's retries
            return StorageUnreachable, f"the S3 endpoint answers {status} ({said(exc)}); try again later"
        if status in (401, 403):
            return StorageDenied, f"the S3 endpoint refuses the credentials ({said(exc)}); check {SETTINGS}"
    return None


BACKEND = Backend(filesystem, version, explain, SETTINGS)
