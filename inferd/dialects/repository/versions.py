"""Version folders and the policy choosing which of them are served, as Triton's model repository
has them: a model folder's numbered subfolders (``1/``, ``2/``...) are its versions, and its policy
serves the latest N (1 by default), all of them, or the ones it names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class PolicyError(ValueError):
    """A ``versions`` entry that is not a policy; the message says what is expected."""


EXPECTED = "expected 'all', {latest: N} (N >= 1) or {specific: [1, 3]}"


@dataclass(frozen=True)
class VersionPolicy:
    """``latest``: serve the newest N; ``specific``: exactly these; neither: every version."""

    latest: int | None = 1
    specific: tuple[int, ...] | None = None

    def select(self, found: Sequence[int]) -> list[int]:
        """The versions of ``found`` this policy serves, oldest first."""
        ordered = sorted(set(found))
        if self.specific is not None:
            return [version for version in ordered if version in self.specific]
        if self.latest is not None:
            return ordered[-self.latest :]
        return ordered


def parse_policy(value: Any) -> VersionPolicy:
    """A policy from a settings file's ``versions`` value (None: Triton's default, the latest one)."""
    if value is None:
        return VersionPolicy()
    if value == "all" or value == {"all": {}} or value == {"all": None}:
        return VersionPolicy(latest=None)
    if not isinstance(value, dict) or len(value) != 1:
        raise PolicyError(f"versions: {value!r}: {EXPECTED}")
    ((kind, argument),) = value.items()
    if kind == "latest":
        if isinstance(argument, dict):  # Triton's {latest: {num_versions: 2}}
            argument = argument.get("num_versions")
        if not isinstance(argument, int) or isinstance(argument, bool) or argument < 1:
            raise PolicyError(f"versions: latest {argument!r}: {EXPECTED}")
        return VersionPolicy(latest=argument)
    if kind == "specific":
        if isinstance(argument, dict):  # Triton's {specific: {versions: [1, 3]}}
            argument = argument.get("versions")
        if not isinstance(argument, list) or not argument or not all(_is_version(item) for item in argument):
            raise PolicyError(f"versions: specific {argument!r}: {EXPECTED}")
        return VersionPolicy(latest=None, specific=tuple(int(item) for item in argument))
    raise PolicyError(f"versions: {value!r}: {EXPECTED}")


def _is_version(item: Any) -> bool:
    return (isinstance(item, int) and not isinstance(item, bool) and item >= 0) or (
        isinstance(item, str) and item.isdigit()
    )


def version_folders(folder: Path) -> dict[int, Path]:
    """The numbered subfolders of a model folder, by version number."""
    return {int(child.name): child for child in folder.iterdir() if child.is_dir() and child.name.isdigit()}
