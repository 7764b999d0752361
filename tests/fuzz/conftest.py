"""Bounded fuzzing for CI: derandomized, no example database, ``INFERD_FUZZ_EXAMPLES`` examples per
property (default 40) and half as many per API operation; set it higher
(``INFERD_FUZZ_EXAMPLES=5000``) for a long run."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("INFERD_FUZZ_EXAMPLES", "40"))
API_EXAMPLES = max(10, EXAMPLES // 2)

settings.register_profile(
    "inferd",
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("inferd")
