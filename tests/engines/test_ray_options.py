"""How inferd's settings become Ray Serve deployment options (``--replicas``, ``--autoscale``, the
per-replica concurrency limit, CPUs, where the app runs), checked by Ray Serve's own ``serve.deployment``,
which validates them without a cluster. The end-to-end runs are in test_ray.py and test_ray_graph.py.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from inferd.config.settings import Settings
from inferd.engines.ray import USER_CODE_THREAD_VARIABLE, deployment_options

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")


class Replica:
    """Stands for the deployment's class: Ray only inspects it here."""


def ray_deployment(settings: Settings) -> Any:
    from ray import serve

    return serve.deployment(Replica, name="inferd", **deployment_options(settings))


def test_fixed_replicas_map_to_ray_options_ray_accepts() -> None:
    settings = Settings(replicas=3, ray_num_cpus=0.25, ray_max_ongoing_requests=128)
    deployment = ray_deployment(settings)
    assert deployment.num_replicas == 3
    assert deployment.max_ongoing_requests == 128
    assert deployment.ray_actor_options["num_cpus"] == 0.25
    assert deployment.ray_actor_options["runtime_env"]["env_vars"] == {USER_CODE_THREAD_VARIABLE: "0"}
    assert "autoscaling_config" not in deployment_options(settings)


def test_the_default_concurrency_limit_is_far_above_rays_five() -> None:
    assert ray_deployment(Settings()).max_ongoing_requests >= 64


def test_user_code_thread_is_rays_own_when_asked() -> None:
    deployment = ray_deployment(Settings(ray_user_code_thread=True))
    assert deployment.ray_actor_options["runtime_env"]["env_vars"] == {USER_CODE_THREAD_VARIABLE: "1"}


@pytest.mark.parametrize(("autoscale", "low", "initial", "high"), [("0:3", 0, 1, 3), ("2:6", 2, 2, 6)])
def test_autoscale_maps_to_rays_autoscaling_config(autoscale: str, low: int, initial: int, high: int) -> None:
    settings = Settings(autoscale=autoscale, ray_target_ongoing_requests=32)
    options = deployment_options(settings)
    assert "num_replicas" not in options
    assert options["autoscaling_config"] == {
        "min_replicas": low,
        "initial_replicas": initial,  # scale to zero still starts with one, to answer at once
        "max_replicas": high,
        "target_ongoing_requests": 32,
    }
    ray_deployment(settings)  # Ray validates the autoscaling config: a key or value it rejects raises


@pytest.mark.parametrize("prefix", ["/", "/inferd-iris-svc-1", "/a/b"])
def test_a_route_prefix_is_slash_or_names_after_slashes(prefix: str) -> None:
    assert Settings(ray_route_prefix=prefix).ray_route_prefix == prefix


@pytest.mark.parametrize("prefix", ["", "a", "/a/", "/a//b", "/{x}", "/a?b"])
def test_route_prefixes_ray_would_refuse_at_deploy_time_are_refused_by_name(prefix: str) -> None:
    """Ray Serve refuses a prefix without a leading slash, with a trailing one or with wildcards when
    the application is deployed (on the cluster); the settings refuse them at once."""
    with pytest.raises(ValueError, match="ray_route_prefix"):
        Settings(ray_route_prefix=prefix)
