"""The autoscaler's arithmetic, on a clock of its own: the load averaged over the window, scale ups at
once (or after their stabilisation period), scale downs only after theirs, within the bounds; and how a
route's weight is shared by its replicas for a data path without groups."""

from __future__ import annotations

from inferd.platform.datapath import spread
from inferd.platform.scaling import Recommender, ScalePolicy
from inferd.platform.scaling.policy import Bounds


def run(recommender: Recommender, loads: list[int], bounds: Bounds, start: float = 0.0) -> list[int]:
    """One recommendation a second for each load; the count moves as recommended."""
    counts = []
    for second, load in enumerate(loads):
        wanted = recommender.recommend(start + second, load, bounds)
        bounds = Bounds(wanted, bounds.low, bounds.high, bounds.target)
        counts.append(wanted)
    return counts


def test_scales_up_at_once_and_down_only_after_the_stabilisation_period() -> None:
    recommender = Recommender(ScalePolicy(window=2, upscale_delay=0, downscale_delay=5), since=0)
    counts = run(recommender, [0, 6, 6, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0], Bounds(1, 1, 3, 2.0))
    # 6 in flight at 2 a replica is 3 replicas once the 2 s window holds only that load; after it,
    # 3 stays the highest recommendation of the last 5 s until the sixth second after it
    assert counts == [1, 2, 2, 3, 3, 3, 3, 3, 3, 2, 1, 1, 1]


def test_stays_within_its_bounds_and_does_not_scale_down_before_watching_long_enough() -> None:
    recommender = Recommender(ScalePolicy(window=1, upscale_delay=0, downscale_delay=10), since=0)
    assert run(recommender, [100] * 3, Bounds(2, 2, 4, 1.0)) == [4, 4, 4]
    fresh = Recommender(ScalePolicy(window=1, upscale_delay=0, downscale_delay=10), since=0)
    assert run(fresh, [0] * 5, Bounds(3, 1, 4, 1.0)) == [3] * 5  # watched 5 s of the 10


def test_an_upscale_delay_waits_for_the_lowest_recent_recommendation() -> None:
    recommender = Recommender(ScalePolicy(window=0.5, upscale_delay=2, downscale_delay=60), since=0)
    # a one-second burst does not scale; a lasting load does, after 2 s
    assert run(recommender, [0, 8, 0, 8, 8, 8], Bounds(1, 1, 8, 1.0)) == [1, 1, 1, 1, 1, 8]


def test_a_routes_weight_is_shared_by_its_replicas_exactly() -> None:
    weights = spread([(("a:1", "a:2", "a:3"), 10), ("b:1", 90)], scale=2)
    assert weights == {"a:1": 7, "a:2": 7, "a:3": 6, "b:1": 180}
    assert sum(weights[f"a:{n}"] for n in (1, 2, 3)) * 9 == weights["b:1"]
