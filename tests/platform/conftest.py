"""The storage tests' moto S3 server, for runs in object storage and the artifact store's copies there."""

from tests.storage.conftest import bucket, s3_endpoint  # noqa: F401 (fixtures)
