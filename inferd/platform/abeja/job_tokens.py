"""Each ABEJA training job's own credential, so that a job never holds the control process's token.

A job's code reads its environment, and ABEJA's SDK needs credentials there to call the platform
back (``update_statistics``, the DataLake, datasets). It gets ``abeja-job.<job id>.<HMAC>``: the HMAC
of its id under the key services' tokens are derived from (`ServiceTokens`), so nothing is stored per
job and the token still works after a restart. `AbejaCredentials` takes it, in place of the control
process's token, only for what `allows` lists: the job's own record and statistics, and reads of the
DataLake and datasets. Anything else with it is refused (401), as an unknown token is.
"""

from __future__ import annotations

import hmac
import re
from pathlib import Path

from inferd.platform.service_tokens import ServiceTokens

PREFIX = "abeja-job."
_JOB_PATH = re.compile(
    r"/organizations/[^/]+/training/definitions/[^/]+/jobs/(?P<job>[^/]+)(?P<rest>/statistics)?"
)
_READS = (
    re.compile(r"/organizations/[^/]+/channels(/[^/]+)?"),
    re.compile(r"/channels/[^/]+(/[^/]+(/content)?)?"),
    re.compile(r"/organizations/[^/]+/datasets(/.*)?"),
)


class JobTokens:
    """The tokens of the jobs of one control process (``folder``: its platform folder)."""

    def __init__(self, folder: Path) -> None:
        self._tokens = ServiceTokens(folder)

    def of(self, job_id: str) -> str:
        return f"{PREFIX}{job_id}.{self._tokens.of(f'abeja training job {job_id}')}"

    def job_of(self, token: str) -> str | None:
        """The job whose token this is, or None."""
        if not token.startswith(PREFIX):
            return None
        job_id, dot, _ = token[len(PREFIX) :].partition(".")
        if not dot or not job_id.isdigit():
            return None
        return job_id if hmac.compare_digest(token, self.of(job_id)) else None

    def allows(self, token: str, method: str, path: str) -> bool:
        """Whether the job holding ``token`` may make this request."""
        job_id = self.job_of(token)
        if job_id is None:
            return False
        found = _JOB_PATH.fullmatch(path)
        if found is not None and found["job"] == job_id:
            return method == ("POST" if found["rest"] else "GET")
        return method == "GET" and any(pattern.fullmatch(path) for pattern in _READS)
