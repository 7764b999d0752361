"""A pickle served from object storage (moto's S3 API on loopback): ``inferd serve s3://.../iris/``
fetches the folder, serves its ``model.joblib``, and says in its log that it loads a pickle from
there."""

from __future__ import annotations

from pathlib import Path

from tests.dialects.runtimes.conftest import ROWS, write_sklearn
from tests.servers import serve
from tests.storage.conftest import Bucket, bucket, s3_endpoint  # noqa: F401 (fixtures)


def test_a_pickle_from_object_storage_is_served_and_logged(bucket: Bucket, tmp_path: Path) -> None:  # noqa: F811
    estimator = write_sklearn(tmp_path / "iris")
    bucket.put("models/iris/model.joblib", (tmp_path / "iris" / "model.joblib").read_bytes())
    cache = tmp_path / "cache"
    with serve(f"s3://{bucket.name}/models/iris/", "--model-cache-dir", str(cache)) as server:
        with server.http() as http:
            answer = http.post("/v1/models/iris:predict", json={"instances": ROWS})
            assert answer.json() == {"predictions": estimator.predict(ROWS).tolist()}
        assert f"s3://{bucket.name}/models/iris/ holds a pickle (model.joblib)" in server.log
