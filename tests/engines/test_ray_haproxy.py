"""--ray-haproxy on inferd's local Ray: what Ray's HAProxy is told, so that two local Rays in that mode
can run on one machine and leave nothing behind.

Ray puts HAProxy's files in a folder named after the node, by default under /tmp/haproxy-serve (kept
after shutdown); it binds its statistics page and Prometheus exporter at fixed ports on all
interfaces (a second instance's HAProxy then fails to start); and a leaving replica keeps serving
30 s, for load balancers across a cluster to notice, so stopping took over 30 s. Running HAProxy mode
end to end opens those listeners on every interface, which tests must not do: bench/ray_serve.py
runs it (``RAY_HAPROXY=1``), and the checks here are on the variables the local Ray is started with.
"""

from __future__ import annotations

import os

import pytest

from inferd.engines.ray import (
    HAPROXY_DRAIN_VARIABLE,
    HAPROXY_FILE_VARIABLES,
    HAPROXY_FOLDER_PARENT,
    HAPROXY_FOLDER_PREFIX,
    HAPROXY_PORT_VARIABLES,
    HAPROXY_VARIABLE,
    _haproxy_environment,
    _temporary_folder,
)

#: A Ray node id, as Ray names HAProxy's per-node folder.
NODE_ID = "f" * 56
#: The longest socket path HAProxy accepts.
HAPROXY_SOCKET_PATH_MAX = 97


def test_haproxy_files_go_to_a_folder_of_the_run_and_leave_with_it() -> None:
    with _temporary_folder(HAPROXY_FOLDER_PREFIX, HAPROXY_FOLDER_PARENT) as folder:
        values = _haproxy_environment(folder)
        assert values[HAPROXY_VARIABLE] == "1"
        assert values["RAY_SERVE_HAPROXY_SERVER_STATE_BASE"] == folder
        for name in HAPROXY_FILE_VARIABLES:
            assert os.path.dirname(values[name]) == folder, name
    assert not os.path.exists(folder)


def test_haproxy_socket_paths_fit_once_ray_adds_the_node_folder() -> None:
    with _temporary_folder(HAPROXY_FOLDER_PREFIX, HAPROXY_FOLDER_PARENT) as folder:
        values = _haproxy_environment(folder)
    for name in ("RAY_SERVE_HAPROXY_SOCKET_PATH", "RAY_SERVE_HAPROXY_METRICS_SOCKET_PATH"):
        where, file = os.path.split(values[name])
        assert len(os.path.join(where, NODE_ID, file).encode()) <= HAPROXY_SOCKET_PATH_MAX, values[name]


def test_haproxy_side_listeners_get_ports_of_their_own() -> None:
    with _temporary_folder(HAPROXY_FOLDER_PREFIX, HAPROXY_FOLDER_PARENT) as folder:
        values = _haproxy_environment(folder)
    ports = [int(values[name]) for name in HAPROXY_PORT_VARIABLES]
    assert all(1024 <= port < 65536 for port in ports), ports
    assert not {8404, 9101} & set(ports), "Ray's fixed defaults"
    assert len(set(ports)) == len(ports), ports


def test_a_leaving_replica_drains_for_seconds_unless_the_environment_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(HAPROXY_DRAIN_VARIABLE, raising=False)
    with _temporary_folder(HAPROXY_FOLDER_PREFIX, HAPROXY_FOLDER_PARENT) as folder:
        assert 0 < float(_haproxy_environment(folder)[HAPROXY_DRAIN_VARIABLE]) <= 10
        monkeypatch.setenv(HAPROXY_DRAIN_VARIABLE, "45")
        assert _haproxy_environment(folder)[HAPROXY_DRAIN_VARIABLE] == "45"
