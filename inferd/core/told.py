"""What a model repository's polls have told already, so that a broken model is logged once per
change of its files rather than at every poll (with ``--repository-poll 1``, one error line a second
for as long as nobody fixed it, and a changed model whose load fails loaded again every poll).

Two things are remembered per model: the problem a folder gave (with the digest of the files it gave
it from: the same problem found in changed files is told again), and the files (their fingerprint) a
changed version failed to load from, which a poll does not try again until they change; an explicit
load (the V2 repository API's) tries them at once. A model served again, or gone, is forgotten: if it
breaks again, that is told."""

from __future__ import annotations

from collections.abc import Collection

from inferd.core.repository import Scan, ServedModel


class Told:
    """The problems told and the loads failed, of one registry's repository."""

    def __init__(self) -> None:
        self._problems: dict[str, str] = {}
        self._failed: dict[tuple[str, str | None], str] = {}

    def new_problems(self, scan: Scan, only: str | None = None) -> set[str]:
        """The names of ``scan``'s problems not told for the files they were found in; from now on
        told. ``only``: the scan is of that model alone (the others' are kept)."""
        found = {
            name: f"{scan.problem_keys.get(name, '')}\0{problem}" for name, problem in scan.problems.items()
        }
        fresh = {name for name, key in found.items() if self._problems.get(name) != key}
        if only is None:
            self._problems = found
        else:
            self._problems.pop(only, None)
            self._problems.update(found)
        return fresh

    def failed_before(self, served: ServedModel) -> bool:
        """Whether ``served`` is the very files a load of its version failed from."""
        return (
            bool(served.fingerprint) and self._failed.get((served.name, served.version)) == served.fingerprint
        )

    def failed(self, served: ServedModel) -> None:
        self._failed[(served.name, served.version)] = served.fingerprint

    def keep(self, served: Collection[ServedModel]) -> None:
        """Forget the failed loads of versions now served from other files, or gone."""
        now = {(model.name, model.version): model.fingerprint for model in served}
        self._failed = {key: print_ for key, print_ in self._failed.items() if now.get(key) == print_}
