"""How many replicas a service should run, from its load: what Cortex and KServe users expect.

The load is the requests a service's replicas hold in flight at the data path, sampled every tick and
averaged over ``window`` seconds; the raw recommendation is that average divided by the service's
target per replica, rounded up, within its bounds (Cortex's ``target_replica_concurrency``, KServe's
concurrency target). Two stabilisation periods keep it from flapping, as Cortex's do: a scale up goes
to the lowest count recommended over ``upscale_delay`` seconds, a scale down to the highest count
recommended over ``downscale_delay`` seconds, and not before the service was watched that long.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

#: Float noise below which an average at a whole multiple of the target does not round up.
_EPSILON = 1e-9


@dataclass(frozen=True)
class ScalePolicy:
    window: float = 60.0
    upscale_delay: float = 0.0
    downscale_delay: float = 300.0


@dataclass(frozen=True)
class Bounds:
    """A service's scaling as the recommender needs it: replicas now, min, max, and the target."""

    current: int
    low: int
    high: int
    target: float


class Recommender:
    """One service's samples and recommendations; times are `time.monotonic` seconds."""

    def __init__(self, policy: ScalePolicy, since: float) -> None:
        self.policy = policy
        self.since = since
        self.samples: deque[tuple[float, int]] = deque()
        self.recommended: deque[tuple[float, int]] = deque()

    def average(self, now: float) -> float:
        """The mean in-flight count of the samples within the window."""
        while self.samples and now - self.samples[0][0] > self.policy.window:
            self.samples.popleft()
        return sum(count for _, count in self.samples) / len(self.samples) if self.samples else 0.0

    def recommend(self, now: float, inflight: int, bounds: Bounds) -> int:
        """Take a sample (``inflight``: the requests the service holds now) and answer the replicas it
        should run: ``bounds.current`` when nothing is to change."""
        self.samples.append((now, inflight))
        raw = math.ceil(self.average(now) / bounds.target - _EPSILON)
        raw = min(bounds.high, max(bounds.low, 1, raw))
        self.recommended.append((now, raw))
        keep = max(self.policy.upscale_delay, self.policy.downscale_delay)
        while now - self.recommended[0][0] > keep:
            self.recommended.popleft()
        if raw > bounds.current:
            return max(bounds.current, self._within(now, self.policy.upscale_delay, min))
        if raw < bounds.current and now - self.since >= self.policy.downscale_delay:
            return min(bounds.current, self._within(now, self.policy.downscale_delay, max))
        return bounds.current

    def _within(self, now: float, period: float, pick: Callable[[Iterable[int]], int]) -> int:
        """The lowest or highest (``pick``) count recommended over the last ``period`` seconds."""
        return pick(count for at, count in self.recommended if now - at <= period)
