"""What a workflow asks the platform for: a `Layout` (one deployment, one endpoint, its routes by
weight and an optional shadow), each route a `Part` to run (a project folder, what ``inferd serve``
runs inside it, workers, environment) or the endpoint's `Previous` service.

A part's bundle is its folder as ``inferd platform push`` packs it, plus the files the workflow
writes beside the user's (a ``cortex.yaml`` holding one API, a SeldonDeployment holding one
predictor). The folder is staged as a tree of hard links (a copy where links cannot be made), so the
user's folder is never written to and large model files are not copied. The version's label names the
content (`Staged.label`): deploying the same project twice finds the version it made the first time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from inferd.platform.artifacts import SKIPPED_NAMES, SKIPPED_SUFFIXES, pack
from inferd.platform.records import Scaling


class WorkflowError(Exception):
    """A workflow cannot go on: a bad project file, or a version that failed to start. Nothing the
    workflow changed is left half done; the message says what happened."""


@dataclass(frozen=True)
class Part:
    """One service to run: ``inferd serve TARGET --dialect DIALECT`` in ``folder`` (with ``files``
    written into it), with ``workers`` processes a replica, ``environment``, and its replicas'
    ``scaling``."""

    name: str
    folder: Path
    target: str = "."
    dialect: str = "auto"
    files: Mapping[str, str] = field(default_factory=dict)
    workers: int = 1
    environment: Mapping[str, str] = field(default_factory=dict)
    scaling: Scaling = field(default_factory=Scaling)
    #: Files of ``folder`` the bundle leaves out (the manifest itself: a change of its traffic
    #: weights is no change of what a service runs).
    leave_out: tuple[str, ...] = ()


@dataclass(frozen=True)
class Previous:
    """The service the endpoint gave the most weight before (KServe's previously rolled-out revision,
    keeping ``100 - canaryTrafficPercent``). When there is none, or it is the one a part runs again,
    the route is dropped and its weight goes to the last part."""


@dataclass(frozen=True)
class Layout:
    """What one endpoint should look like: ``routes`` are (part or kept service, weight) with the
    weights summing to 100; ``shadow`` a part mirrored ``percent`` of the requests."""

    deployment: str
    endpoint: str
    routes: tuple[tuple[Part | Previous, int], ...]
    shadow: tuple[Part, int] | None = None
    description: str = ""

    def parts(self) -> list[Part]:
        found = [part for part, _ in self.routes if isinstance(part, Part)]
        return found + ([self.shadow[0]] if self.shadow else [])


@dataclass(frozen=True)
class Staged:
    """A part packed: the archive to push, the sha256 of its bytes (the bundle's digest)."""

    part: Part
    archive: Path
    digest: str

    @property
    def label(self) -> str:
        """``<part name>-<12 hex digits>``, naming the bundle and what the version runs it with."""
        said = json.dumps(
            [self.digest, self.part.target, self.part.dialect, sorted(self.part.environment.items())]
        )
        key = hashlib.sha256(said.encode()).hexdigest()[:12]
        name = re.sub(r"[^A-Za-z0-9_.+-]", "-", self.part.name).lstrip("-_.+")[:100] or "v"
        return f"{name}-{key}"


@contextlib.contextmanager
def staged(part: Part) -> Iterator[Staged]:
    """``part`` packed in a scratch folder, removed afterwards."""
    scratch = Path(tempfile.mkdtemp(prefix="inferd-deploy-"))
    try:
        tree = scratch / "tree"
        link_tree(part.folder, tree)
        for name in part.leave_out:
            (tree / name).unlink(missing_ok=True)
        for name, text in part.files.items():
            path = tree / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.unlink(missing_ok=True)  # a hard link to the user's file: never written through
            path.write_text(text)
        archive = scratch / f"{part.name}.tar.gz"
        with archive.open("wb") as out:
            pack(tree, out)
        digest = hashlib.sha256()
        with archive.open("rb") as read:
            for block in iter(lambda: read.read(1 << 20), b""):
                digest.update(block)
        yield Staged(part, archive, f"sha256:{digest.hexdigest()}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def link_tree(source: Path, into: Path) -> None:
    """``source`` as a tree of hard links at ``into`` (copies across file systems), leaving out what
    a bundle never holds."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    def skipped(_folder: str, names: list[str]) -> set[str]:
        return {name for name in names if name in SKIPPED_NAMES or name.endswith(SKIPPED_SUFFIXES)}

    if not source.is_dir():
        raise WorkflowError(f"{source} is not a folder")
    shutil.copytree(source, into, symlinks=True, copy_function=link, ignore=skipped)
