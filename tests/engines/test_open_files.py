"""How many connections a server process keeps under its open files limit."""

from __future__ import annotations

import logging

import pytest

from inferd.engines.open_files import RESERVED, connection_budget


def test_the_connection_limit_stands_when_the_open_files_limit_holds_it() -> None:
    assert connection_budget(1000, 1000 + RESERVED) == 1000
    assert connection_budget(1000, None) == 1000  # unlimited


def test_the_connection_limit_is_lowered_with_a_warning_under_a_small_open_files_limit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="inferd.engine"):
        assert connection_budget(1000, 1024) == 1024 - RESERVED
    assert "max_connections lowered from 1000 to 896: the open files limit is 1024" in caplog.text
    assert connection_budget(1000, 10) == 1  # never below one connection
