"""The settings' string patterns run on Python's re (`ServerSettings`' ``regex_engine``, issue 26
memory): they accept and refuse what they did on pydantic-core's own engine."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from inferd.config.settings import Settings

ACCEPTED = [
    ("autoscale", "0:3"),
    ("autoscale", "12:40"),
    ("ray_route_prefix", "/"),
    ("ray_route_prefix", "/iris"),
    ("ray_route_prefix", "/a/b-c"),
    ("payload_log_url", "http://127.0.0.1:9/"),
    ("payload_log_url", "https://sink.example/events"),
]
REFUSED = [
    ("autoscale", "3"),
    ("autoscale", "a:3"),
    ("autoscale", " 1:3"),
    ("autoscale", "1:3 "),
    ("ray_route_prefix", "iris"),
    ("ray_route_prefix", "/iris/"),
    ("ray_route_prefix", "/a?b"),
    ("payload_log_url", "ftp://sink"),
    ("payload_log_url", " http://sink"),
]


@pytest.mark.parametrize(("name", "value"), ACCEPTED)
def test_a_value_matching_its_pattern_is_kept(name: str, value: str) -> None:
    assert getattr(Settings(**{name: value}), name) == value


@pytest.mark.parametrize(("name", "value"), REFUSED)
def test_a_value_not_matching_its_pattern_is_refused_naming_it(name: str, value: str) -> None:
    with pytest.raises(ValidationError, match="String should match pattern"):
        Settings(**{name: value})
