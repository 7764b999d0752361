"""Seldon predict batching, opted into per model: concurrent messages share a call and each gets its
own rows, meta and puid back; without the model's own setting nothing is batched."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.dialects.seldon.conftest import COMPONENTS
from tests.servers import RunningServer, serve

OPT_IN = {"INFERD_MODELS__BATCHY__MAX_BATCH_SIZE": "16", "INFERD_MODELS__BATCHY__MAX_BATCH_TIME_MS": "100"}


def predict(server: RunningServer, value: int, kind: str = "ndarray") -> httpx.Response:
    data = (
        {"ndarray": [[value, value]]}
        if kind == "ndarray"
        else {"tensor": {"shape": [1, 2], "values": [value, value]}}
    )
    body = {"data": data, "meta": {"puid": f"p{value}", "tags": {"value": value}}}
    with httpx.Client(base_url=server.http_url, timeout=30) as http:
        return http.post("/api/v1.0/predictions", json=body)


def concurrently(server: RunningServer, count: int, kind: str = "ndarray") -> list[httpx.Response]:
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda value: predict(server, value, kind), range(count)))


def rows_of(answer: httpx.Response) -> list[float]:
    data = answer.json()["data"]
    return data["ndarray"][0] if "ndarray" in data else data["tensor"]["values"]


def test_opted_in_predict_is_batched_and_answers_are_split_back() -> None:
    with serve("Batchy", "--dialect", "seldon", env=OPT_IN, cwd=COMPONENTS) as server:
        for kind in ("ndarray", "tensor"):
            answers = concurrently(server, 12, kind)
            assert all(answer.status_code == 200 for answer in answers), [a.text for a in answers]
            for value, answer in enumerate(answers):
                body = answer.json()
                assert rows_of(answer)[:2] == [2 * value, 2 * value]
                assert body["meta"]["puid"] == f"p{value}"
                assert body["meta"]["tags"]["value"] == value
                assert body["data"]["names"] == ["t:0", "t:1", "t:2"]
            assert max(rows_of(answer)[2] for answer in answers) > 1
        seven = predict(server, 7).json()
        assert seven["meta"]["tags"] == {"value": 7, "seven": True}
        assert "sevens_total{" in httpx.get(f"{server.http_url}/metrics").text
        bad = httpx.post(f"{server.http_url}/predict", json={"data": {"ndarray": [[1, 2], [3]]}})
        assert bad.status_code == 400


def test_the_server_wide_size_does_not_batch_seldon_predict() -> None:
    with serve("Batchy", "--dialect", "seldon", "--max-batch-size", "16", cwd=COMPONENTS) as server:
        answers = concurrently(server, 8)
        assert {rows_of(answer)[2] for answer in answers} == {1}
