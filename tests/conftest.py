"""The servers many test folders share: the bundled iris example and the toy models of tests/models."""

from __future__ import annotations

from tests.servers import ROOT, client_of, serve, served

IRIS = str(ROOT / "examples" / "iris")
TEST_MODELS = ROOT / "tests" / "models"

#: The bundled iris example served once for the whole session (HTTP + gRPC).
iris_server = served(lambda: serve(IRIS))
#: The toy models of tests/models/native.py, all served by one process.
models_server = served(lambda: serve(str(TEST_MODELS / "native.py"), "--dialect", "native"))
client = client_of("iris_server")
