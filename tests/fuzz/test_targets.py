"""The two checks of a version's target (`inferd.platform.targets`) against the file system itself as
the reference: in a bundle whose links all lead inside it (what unpacking guarantees), a target the
check at creation lets through, judged as written, must stay inside once resolved by the kernel's
own rules (``os.path.realpath``), links followed; and the check of the unpacked bundle agrees with
that resolution. URI prefixes are matched by whole path segments, never by text alone."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from inferd.core.errors import InvalidInput
from inferd.platform.targets import check_new_target, check_unpacked_target
from inferd.storage.confine import outside_problem

FOLDERS = ["a", "a/b", "c"]
NAMES = ["a", "b", "c", "l1", "l2", "l3", "model.py", ".", "..", ""]
#: Where links are made, and the folders (inside) they may point to.
LINKS = ["l1", "a/l2", "a/b/l3"]
POINTED = [".", "a", "a/b", "c"]


def bundle(root: Path, pointing: list[str]) -> Path:
    """A bundle of `FOLDERS` and a ``model.py``, with each of `LINKS` pointing (relatively, with
    ``..`` where needed, as archives write them) at a folder inside it."""
    for folder in FOLDERS:
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "model.py").write_text("")
    for link, target in zip(LINKS, pointing, strict=True):
        relative = os.path.relpath(root / target, (root / link).parent)
        (root / link).symlink_to(relative)
    return root


def inside(root: Path, target: str) -> bool:
    found = os.path.realpath(root / target)
    return os.path.commonpath([found, os.path.realpath(root)]) == os.path.realpath(root)


@settings(max_examples=150, deadline=None)
@given(
    pointing=st.lists(st.sampled_from(POINTED), min_size=len(LINKS), max_size=len(LINKS)),
    parts=st.lists(st.sampled_from(NAMES), min_size=1, max_size=6),
)
def test_a_target_let_through_at_creation_stays_inside_the_unpacked_bundle(
    pointing: list[str], parts: list[str]
) -> None:
    target = "/".join(parts) or "."
    with tempfile.TemporaryDirectory() as temp:
        root = bundle(Path(temp) / "bundle", pointing)
        try:
            check_new_target(target, ())
        except InvalidInput:
            return
        assert inside(root, target), (target, pointing)
        check_unpacked_target(target, root, ())  # agrees: no refusal


@settings(max_examples=150, deadline=None)
@given(
    pointing=st.lists(st.sampled_from(POINTED), min_size=len(LINKS), max_size=len(LINKS)),
    parts=st.lists(st.sampled_from(NAMES), min_size=1, max_size=6),
)
def test_the_unpacked_check_is_the_kernels_resolution(pointing: list[str], parts: list[str]) -> None:
    target = "/".join(parts) or "."
    with tempfile.TemporaryDirectory() as temp:
        root = bundle(Path(temp) / "bundle", pointing)
        assert (outside_problem(target, root) is None) == inside(root, target), (target, pointing)


SEGMENTS = st.sampled_from(["models", "models-2", "m", ".", "..", "%2e%2e", "x.py", ""])


@settings(max_examples=300, deadline=None)
@given(prefix=st.lists(SEGMENTS, min_size=1, max_size=3), rest=st.lists(SEGMENTS, min_size=0, max_size=4))
def test_a_uri_is_allowed_only_under_its_prefixs_whole_segments(prefix: list[str], rest: list[str]) -> None:
    allowed = "s3://bucket/" + "/".join(prefix) + "/"
    uri = "s3://bucket/" + "/".join(rest)
    wanted = [part for part in "/".join(prefix).split("/") if part]
    decoded = [part.replace("%2e", ".") for part in "/".join(rest).split("/")]
    ok = (
        not any(part in (".", "..") for part in decoded)
        and not any(part in (".", "..", "%2e%2e") for part in wanted)
        and [part for part in decoded if part][: len(wanted)] == wanted
    )
    assert (outside_problem(uri, Path("/nonexistent"), [allowed]) is None) == ok, (uri, allowed)
