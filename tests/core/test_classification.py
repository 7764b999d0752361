"""`inferd.core.classification.classify` against a plain Python ranking of the same scores, for any
shape (empty ones included) and K, and the labels file's limits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from inferd.core.classification import MAX_LABELS_BYTES, classify, labels_of

SCORES = hnp.arrays(
    np.float32,
    hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5),
    elements=st.floats(-1e6, 1e6, width=32),
)


@settings(max_examples=200, deadline=None)
@given(SCORES, st.integers(1, 12), st.booleans())
def test_top_k_is_the_highest_scores_first(scores: np.ndarray, count: int, rows: bool) -> None:
    labels = [f"class-{index}" for index in range(3)]
    answer = classify("out", scores, count, rows, labels)
    table = scores.reshape(scores.shape[0], int(np.prod(scores.shape[1:]))) if rows else scores.reshape(1, -1)
    top = min(count, table.shape[1])
    assert answer.shape == ((table.shape[0], top) if rows else (top,))
    for row, got in zip(table, answer.reshape(table.shape[0], top), strict=True):
        expected = sorted(range(len(row)), key=lambda index: (-float(row[index]), index))[:top]
        texts = [item.decode() for item in got]
        assert [int(text.split(":")[1]) for text in texts] == expected
        for text, index in zip(texts, expected, strict=True):
            assert float(text.split(":")[0]) == float(f"{float(row[index]):f}")
            assert text.split(":")[2:] == ([labels[index]] if index < len(labels) else [])


def test_labels_file_over_its_limit_gives_no_labels(tmp_path: Path) -> None:
    (tmp_path / "labels.txt").write_text("a\nb\n")
    assert labels_of(object(), str(tmp_path)) == ("a", "b")
    version = tmp_path / "1"
    version.mkdir()
    assert labels_of(object(), str(version)) == ("a", "b")  # the folder above a version's
    with (tmp_path / "labels.txt").open("wb") as file:
        file.truncate(MAX_LABELS_BYTES + 1)  # sparse: nothing written
    assert labels_of(object(), str(tmp_path)) is None
    assert labels_of(object(), "s3://bucket/model") is None
