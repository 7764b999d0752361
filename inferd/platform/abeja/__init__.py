"""The ABEJA-compatible API of the control process: ``abeja model ...`` and ``abeja datalake ...``
from ABEJA's published CLI (and its SDK) work against inferd when ``ABEJA_API_URL`` points at the
control API. See docs/platform-abeja.md."""

from inferd.platform.abeja.credentials import AbejaCredentials
from inferd.platform.abeja.family import abeja_routes
from inferd.platform.abeja.presign import Presigner
from inferd.platform.abeja.routes import first_token

__all__ = ["AbejaCredentials", "Presigner", "abeja_routes", "first_token"]
