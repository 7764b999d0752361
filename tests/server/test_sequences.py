"""Stateful native models (`inferd.SequenceModel`) over a real ``inferd serve``: state persists across
the requests of one sequence, sequences are independent, ``sequence_end`` and the idle timeout drop
state, ``max_sequences`` is enforced, and bad sequence parameters are 400s with a JSON reason."""

from __future__ import annotations

import os
import subprocess
import time
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from tests.servers import ROOT, RunningServer, client_of, inferd_command, serve, served, with_this_tree

IDLE = 2.0
MOST = 3

sequence_server = served(
    lambda: serve(
        "tests/models/sequences.py:Accumulator",
        env={"INFERD_SEQUENCE_IDLE_TIMEOUT": str(IDLE), "INFERD_MAX_SEQUENCES": str(MOST)},
    ),
    scope="module",
)
http = client_of("sequence_server")
URL = "/v2/models/accumulator/infer"


def body(x: int, **parameters: Any) -> dict[str, Any]:
    return {
        "inputs": [{"name": "x", "datatype": "INT64", "shape": [1], "data": [x]}],
        "parameters": parameters,
    }


def total(http: httpx.Client, x: int, **parameters: Any) -> int:
    answer = http.post(URL, json=body(x, **parameters))
    assert answer.status_code == 200, answer.text
    return int(answer.json()["outputs"][0]["data"][0])


def refused(http: httpx.Client, x: int, status: int, **parameters: Any) -> str:
    answer = http.post(URL, json=body(x, **parameters))
    assert answer.status_code == status, answer.text
    return str(answer.json()["error"])


def test_state_persists_within_a_sequence_and_sequences_are_independent(http: httpx.Client) -> None:
    assert total(http, 1, sequence_id=11, sequence_start=True) == 1
    assert total(http, 10, sequence_id="eleven", sequence_start=True) == 10
    assert total(http, 2, sequence_id=11) == 3
    assert total(http, 20, sequence_id="eleven") == 30
    assert total(http, 3, sequence_id=11, sequence_end=True) == 6
    assert total(http, 30, sequence_id="eleven", sequence_end=True) == 60


def test_end_drops_the_state(http: httpx.Client) -> None:
    assert total(http, 5, sequence_id=12, sequence_start=True, sequence_end=True) == 5
    assert "was not started" in refused(http, 1, 400, sequence_id=12)
    # A start of an id again begins from a fresh state.
    assert total(http, 7, sequence_id=12, sequence_start=True, sequence_end=True) == 7


def test_a_start_restarts_a_live_sequence(http: httpx.Client) -> None:
    assert total(http, 4, sequence_id=13, sequence_start=True) == 4
    assert total(http, 1, sequence_id=13, sequence_start=True) == 1
    assert total(http, 1, sequence_id=13, sequence_end=True) == 2


def test_an_idle_sequence_is_dropped(http: httpx.Client) -> None:
    assert total(http, 1, sequence_id=14, sequence_start=True) == 1
    time.sleep(IDLE + 0.5)
    error = refused(http, 1, 400, sequence_id=14)
    assert "was not started" in error and "idle" in error


def test_max_sequences_is_enforced_and_freed_by_end(http: httpx.Client) -> None:
    for number in range(MOST):
        assert total(http, 1, sequence_id=100 + number, sequence_start=True) == 1
    answer = http.post(URL, json=body(1, sequence_id=200, sequence_start=True))
    assert answer.status_code == 503, answer.text
    assert "max_sequences" in answer.json()["error"] and answer.headers["retry-after"] == "1"
    # The live ones keep their state; ending one makes room.
    assert total(http, 1, sequence_id=100, sequence_end=True) == 2
    assert total(http, 1, sequence_id=200, sequence_start=True, sequence_end=True) == 1
    for number in range(1, MOST):
        assert total(http, 1, sequence_id=100 + number, sequence_end=True) == 2


@pytest.mark.parametrize(
    ("parameters", "words"),
    [
        ({}, "non-zero sequence_id"),
        ({"sequence_id": 0, "sequence_start": True}, "non-zero sequence_id"),
        ({"sequence_id": "", "sequence_start": True}, "non-zero sequence_id"),
        ({"sequence_id": 1.5, "sequence_start": True}, "integer or a string"),
        ({"sequence_id": True, "sequence_start": True}, "integer or a string"),
        ({"sequence_id": "x" * 300, "sequence_start": True}, "over 256"),
        ({"sequence_id": 15, "sequence_start": "yes"}, "sequence_start must be true or false"),
        ({"sequence_id": 15, "sequence_end": 1}, "sequence_end must be true or false"),
        ({"sequence_id": 999}, "was not started"),
    ],
)
def test_bad_sequence_parameters_are_400_json(
    http: httpx.Client, parameters: dict[str, Any], words: str
) -> None:
    assert words in refused(http, 1, 400, **parameters)
    assert total(http, 1, sequence_id=16, sequence_start=True, sequence_end=True) == 1  # still serving


def test_tritonclient_grpc_sequence(sequence_server: RunningServer) -> None:
    assert sequence_server.grpc_address is not None
    client = grpcclient.InferenceServerClient(sequence_server.grpc_address)
    try:
        totals = []
        for index, x in enumerate((1, 2, 3)):
            given = grpcclient.InferInput("x", [1], "INT64")
            given.set_data_from_numpy(np.array([x], dtype=np.int64))
            result = client.infer(
                "accumulator",
                [given],
                sequence_id=17,
                sequence_start=index == 0,
                sequence_end=index == 2,
            )
            totals.append(int(result.as_numpy("total")[0]))
        assert totals == [1, 3, 6]
        given = grpcclient.InferInput("x", [1], "INT64")
        given.set_data_from_numpy(np.array([1], dtype=np.int64))
        with pytest.raises(Exception, match="was not started"):
            client.infer("accumulator", [given], sequence_id=17)
    finally:
        client.close()


def test_several_workers_are_refused_at_start_up() -> None:
    """Each worker would keep its own sequences while a sequence's requests reach any worker."""
    command = inferd_command(
        "serve", "tests/models/sequences.py:Accumulator", "--workers", "2", "--port", "0", "--grpc-port", "0"
    )
    started = subprocess.run(
        command, cwd=ROOT, env=with_this_tree(dict(os.environ)), capture_output=True, text=True, timeout=60
    )
    assert started.returncode == 1
    assert "keeps state per sequence" in started.stderr and "Traceback" not in started.stderr
