"""Local Seldon nodes hand their arrays to the next node without a message in between: what each user
method sees, and the answer, must be what they were with the message."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.dialects.graph.conftest import predict, write_graph
from tests.servers import RunningServer, serve

COMPONENTS = {
    # Answers an array it keeps: the next node must get its own copy of it.
    "Stored.py": """
        import numpy as np

        class Stored:
            def __init__(self):
                self.base = np.array([[1.5, 2.5]])

            def transform_input(self, X, names):
                return self.base
    """,
    # Changes its input in place and reports what it was given.
    "InPlace.py": """
        class InPlace:
            def predict(self, X, names, meta):
                assert X.dtype.name == "float64", X.dtype
                assert names == ["t:0", "t:1"], names
                assert meta["puid"] and set(meta["requestPath"]) == {"stored"}, meta
                X += 1
                return X
    """,
    # Has tags(): its answer is a message again, with its tags.
    "Tagger.py": """
        class Tagger:
            def tags(self):
                return {"tagged": True}

            def transform_output(self, X, names):
                return X * 2
    """,
    # Returns a list: taken the long way too.
    "Listing.py": """
        class Listing:
            def transform_output(self, X, names):
                return [[int(value) for value in row] for row in X]
    """,
}
GRAPH = """
name: passing
graph:
  name: listing
  type: OUTPUT_TRANSFORMER
  target: Listing
  children:
  - name: tagger
    type: OUTPUT_TRANSFORMER
    target: Tagger
    children:
    - name: stored
      type: TRANSFORMER
      target: Stored
      children:
      - {name: in-place, type: MODEL, target: InPlace}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    folder: Path = tmp_path_factory.mktemp("passing")
    for name, text in COMPONENTS.items():
        (folder / name).write_text(textwrap.dedent(text))
    with serve(str(write_graph(folder, "passing.yaml", GRAPH)), cwd=folder) as running:
        yield running


def test_each_node_gets_its_own_copy_as_a_message_would_give_it(server: RunningServer) -> None:
    """(1.5, 2.5) + 1, doubled, as ints; the same every time (the stored array is never changed)."""
    for _ in range(3):
        answer = predict(server.http_url, [[9, 9]])
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["data"] == {"names": ["t:0", "t:1"], "ndarray": [[5, 7]]}
        assert body["meta"]["tags"] == {"tagged": True}
        assert set(body["meta"]["requestPath"]) == {"listing", "tagger", "stored", "in-place"}
        assert body["meta"]["routing"] == {"listing": -1, "tagger": -1, "stored": -1, "in-place": -1}


def test_a_tensor_request_stays_a_tensor_through_the_nodes(server: RunningServer) -> None:
    tensor = {"data": {"tensor": {"shape": [1, 2], "values": [0, 0]}}}
    answer = httpx.post(f"{server.http_url}/api/v1.0/predictions", json=tensor, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.json()["data"] == {"names": ["t:0", "t:1"], "tensor": {"shape": [1, 2], "values": [5, 7]}}
