"""A replica that fails to start, in a real `Platform` (its store, artifact store, the embedded
gateway's table and real ``inferd serve`` processes; short back-offs): it is started again with
back-off like a service, then ``failed``, the reason shown in its service's record while the service
keeps serving on its other replicas; the next scaling of the service starts it again. And the folder
a service runs in, which names a model its project does not name."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest

from inferd.platform.artifacts import ArtifactStore
from inferd.platform.datapath import GatewayPath
from inferd.platform.gateway import EndpointTable
from inferd.platform.manager import Platform
from inferd.platform.records import Scaling, Service, ServiceState
from inferd.platform.store import Store
from tests.platform.control import native_project
from tests.platform.services.conftest import POLICY
from tests.servers import with_this_tree

#: Refuses to load while a file ``broken`` is in its folder (which every replica of a service shares).
MODEL = """
    from pathlib import Path

    import inferd

    class Fussy(inferd.Model):
        def load(self):
            if Path("broken").exists():
                raise RuntimeError("fussy: the folder is marked broken")

        def predict(self, inputs):
            return inputs
"""


@pytest.fixture
async def platform(tmp_path: Path) -> AsyncIterator[Platform]:
    root = tmp_path / "platform"
    root.mkdir()
    running = Platform(
        Store(root / "platform.sqlite"),
        ArtifactStore(root / "artifacts", 10**7),
        GatewayPath(EndpointTable()),
        root,
        policy=POLICY,
    )
    try:
        yield running
    finally:
        await running.runner.aclose(grace=5)
        running.store.close()


async def until(
    platform: Platform, service_id: str, check: Callable[[Service], bool], seen: list[str] | None = None
) -> Service:
    """The service's record once ``check`` holds; each reason it showed meanwhile added to ``seen``."""
    for _ in range(1200):
        service = platform.store.service(service_id)
        if seen is not None and service.reason and service.reason not in seen:
            seen.append(service.reason)
        if check(service):
            return service
        await asyncio.sleep(0.02)
    raise AssertionError(f"not reached: {platform.store.service(service_id)}")


async def test_a_replica_that_fails_to_start_is_retried_then_failed_then_retried_by_a_scale(
    platform: Platform, tmp_path: Path
) -> None:
    platform.create_deployment("fussy")
    version = platform.add_version("fussy", "1", native_project(tmp_path / "fussy", "fussy", MODEL))
    created = await platform.create_service(
        "fussy", version.id, environment=with_this_tree({}), scaling=Scaling(1, 3)
    )
    first = await until(platform, created.id, lambda s: s.state is ServiceState.RUNNING)
    (platform.services_root / created.id / "fussy" / "broken").touch()  # replicas from now on fail to load

    await platform.scale(created.id, 2)
    seen: list[str] = []
    failed = await until(platform, created.id, lambda s: s.reason.startswith("replica 1 failed"), seen)
    # while it backs off, the service says so; then the replica is given up on
    backing_off = [reason for reason in seen if reason.startswith("replica 1: ")]
    assert backing_off and "starting again in 0.1 s" in backing_off[0], seen
    (replica,) = platform.store.replicas(created.id)
    assert replica.state is ServiceState.FAILED and replica.restarts == 1  # tried twice
    assert failed.reason.startswith(f"replica 1 failed: failed to start {POLICY.start_attempts} times")
    assert "fussy: the folder is marked broken" in failed.reason
    assert (failed.state, failed.pid, failed.ready_replicas) == (ServiceState.RUNNING, first.pid, 1)

    (platform.services_root / created.id / "fussy" / "broken").unlink()
    await platform.scale(created.id, 2)  # the same count: the failed replica is started again
    healed = await until(platform, created.id, lambda s: s.ready_replicas == 2)
    assert healed.reason == "" and healed.state is ServiceState.RUNNING
    (replica,) = platform.store.replicas(created.id)
    assert replica.state is ServiceState.RUNNING and replica.reason == ""


async def test_a_model_is_named_after_its_deployment_unless_an_older_inferd_unpacked_it(
    platform: Platform, tmp_path: Path
) -> None:
    """A project that does not name its model serves it under its folder's name: a service's folder is
    named after its deployment. A service an inferd before that unpacked right in its own folder
    (named by the service's id) keeps that folder when it starts again, and so the name its clients
    know."""
    project = tmp_path / "unnamed"
    project.mkdir()
    (project / "model.py").write_text(textwrap.dedent(MODEL))
    platform.create_deployment("legacy")
    version = platform.add_version("legacy", "1", project)
    created = await platform.create_service("legacy", version.id, environment=with_this_tree({}))
    running = await until(platform, created.id, lambda s: s.state is ServiceState.RUNNING)
    assert served_names(running, platform.token_of(created.id)) == ["legacy"]

    await platform.stop_service(created.id)
    own = platform.services_root / created.id
    for entry in (own / "legacy").iterdir():  # as an older inferd left it
        entry.rename(own / entry.name)
    (own / "legacy").rmdir()
    await platform.start_service(created.id)
    again = await until(platform, created.id, lambda s: s.state is ServiceState.RUNNING)
    assert served_names(again, platform.token_of(created.id)) == [created.id]
    assert not (own / "legacy").exists()


def served_names(service: Service, token: str) -> list[str]:
    """What the service serves, asked with its own token (it takes no other)."""
    address = f"http://127.0.0.1:{service.port}/v2/repository/index"
    index = httpx.post(address, headers={"authorization": f"Bearer {token}"}, timeout=30)
    return [model["name"] for model in index.json()]
