"""Starting the local Ray (`inferd.engines.ray.ray_cluster`) when its GCS does not come up in time:
a GCS that never binds is ended and Ray started again once, then a clear error with the GCS's own
log; nothing of the failed attempts is left running, and a later start in the same process works.
A GCS that never binds is made here by allowing it no time at all (Ray's own variable, which a user
may set and inferd honours)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from inferd.config.settings import Settings
from inferd.core.errors import EngineError
from inferd.engines.ray import GCS_WAIT_VARIABLE, LOCAL_START_ATTEMPTS, ray_cluster

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")


def local_ray_processes() -> set[int]:
    """Processes whose command line names one of the local Ray's folders."""
    found = set()
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if b"/inferd-ray-" in (entry / "cmdline").read_bytes():
                found.add(int(entry.name))
        except OSError:
            continue
    return found


def test_a_gcs_that_never_binds_is_retried_then_reported_and_nothing_is_left(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    before = local_ray_processes()
    monkeypatch.setenv(GCS_WAIT_VARIABLE, "0")
    with pytest.raises(EngineError) as failed, ray_cluster(Settings()):
        pytest.fail("Ray started with no time for its GCS")
    message = str(failed.value)
    assert message.startswith("cannot start or reach Ray: ")
    assert "gcs_server_port" in message
    assert "gcs_server." in message or "the GCS wrote no log" in message
    retries = [record for record in caplog.records if "starting Ray again" in record.getMessage()]
    assert len(retries) == LOCAL_START_ATTEMPTS - 1
    assert local_ray_processes() <= before

    monkeypatch.delenv(GCS_WAIT_VARIABLE)
    with ray_cluster(Settings()) as own:
        import ray

        assert own and ray.is_initialized()
        assert ray.cluster_resources().get("CPU", 0) > 0
    assert not ray.is_initialized()
