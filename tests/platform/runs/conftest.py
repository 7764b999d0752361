"""The storage tests' moto S3 server, for runs whose inputs are in object storage."""

from tests.storage.conftest import bucket, s3_endpoint  # noqa: F401 (fixtures)
