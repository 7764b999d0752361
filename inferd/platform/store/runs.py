"""The runs, triggers and trigger_seen tables: `Runs`, the store's methods over them (a trigger
starts runs, one per file it sees, which is why the two share a module).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from inferd.core.errors import Conflict, InvalidInput
from inferd.platform.records import Run, RunState, Trigger, new_id, now
from inferd.platform.store.checks import _bad, _checked_changes, _enum, _json_object, _text
from inferd.platform.store.connection import Connection
from inferd.platform.store.rows import RUNS, TRIGGERS, _count, _get, _insert, _time_text, _update

#: A run in these states is over: its state no longer changes.
FINAL_RUN_STATES = frozenset({RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED})
_RUN_CHANGES: dict[str, Callable[[Any], Any]] = {
    "state": lambda value: _enum("state", RunState, value),
    "reason": lambda value: _text("reason", value),
    "finished_at": lambda value: value if value is None or isinstance(value, datetime) else _bad_time(value),
}
_TRIGGER_CHANGES: dict[str, Callable[[Any], Any]] = {
    "enabled": lambda value: value if isinstance(value, bool) else _bad("enabled", "true or false", value),
    "input": lambda value: _text("input", value, empty=False),
    "output": lambda value: _text("output", value, empty=False),
    "version_id": lambda value: _text("version_id", value, empty=False),
}


def _bad_time(value: Any) -> Any:
    return _bad("finished_at", "a datetime", value)


class Runs(Connection):
    """The store's runs and the triggers that start them."""

    def add_run(
        self,
        deployment_id: str,
        version_id: str,
        inputs: Sequence[str],
        output: str,
        parameters: Mapping[str, Any] | None = None,
        trigger_id: str | None = None,
    ) -> Run:
        """A new ``pending`` run of a version of the deployment over ``inputs`` (files or URIs)."""
        if isinstance(inputs, str) or not inputs:
            raise InvalidInput("a run needs a list of one or more inputs")
        checked_inputs = tuple(_text("an input", item, empty=False) for item in inputs)
        _text("output", output, empty=False)
        checked_parameters = _json_object("parameters", parameters or {})
        with self._write() as db:
            deployment = self._deployment(db, deployment_id)
            version = self._version_of(db, deployment, version_id)
            if trigger_id is not None:
                trigger = _get(db, TRIGGERS, trigger_id)
                if trigger.deployment_id != deployment.id:
                    raise InvalidInput(f"trigger {trigger_id} belongs to another deployment")
            record = Run(
                new_id("run"),
                deployment.id,
                version.id,
                RunState.PENDING,
                checked_inputs,
                output,
                checked_parameters,
                trigger_id=trigger_id,
            )
            _insert(db, RUNS, record)
        return record

    def run(self, id: str) -> Run:
        with self._read() as db:
            return _get(db, RUNS, id)

    def runs(self, deployment_id: str | None = None, trigger_id: str | None = None) -> list[Run]:
        with self._read() as db:
            return self._listed(db, RUNS, deployment_id, trigger_id=trigger_id)

    def update_run(self, id: str, **changes: Any) -> Run:
        """Change a run's state, reason or finished_at. A finished run's state is final (`Conflict`);
        entering a final state sets ``finished_at`` unless it is given."""
        checked = _checked_changes("run", _RUN_CHANGES, changes)
        with self._write() as db:
            current = _get(db, RUNS, id)
            if "state" in checked and current.state in FINAL_RUN_STATES and checked["state"] != current.state:
                raise Conflict(f"run {id} is {current.state.value} already")
            if checked.get("state") in FINAL_RUN_STATES and current.finished_at is None:
                checked.setdefault("finished_at", now())
            updated = replace(current, **checked)
            _update(db, RUNS, updated, set(checked))
        return updated

    # triggers

    def add_trigger(
        self,
        deployment_id: str,
        version_id: str,
        input: str,
        output: str,
        enabled: bool = True,
        parameters: Mapping[str, Any] | None = None,
    ) -> Trigger:
        """A trigger; ``parameters`` are given to each run it starts."""
        _text("input", input, empty=False)
        _text("output", output, empty=False)
        _TRIGGER_CHANGES["enabled"](enabled)
        checked_parameters = _json_object("parameters", parameters or {})
        with self._write() as db:
            deployment = self._deployment(db, deployment_id)
            version = self._version_of(db, deployment, version_id)
            record = Trigger(
                new_id("trigger"),
                deployment.id,
                version.id,
                input,
                output,
                enabled,
                parameters=checked_parameters,
            )
            _insert(db, TRIGGERS, record)
        return record

    def trigger(self, id: str) -> Trigger:
        with self._read() as db:
            return _get(db, TRIGGERS, id)

    def triggers(self, deployment_id: str | None = None, enabled: bool | None = None) -> list[Trigger]:
        with self._read() as db:
            return self._listed(
                db, TRIGGERS, deployment_id, enabled=None if enabled is None else int(enabled)
            )

    def update_trigger(self, id: str, **changes: Any) -> Trigger:
        """Change a trigger's enabled flag, input, output or version (one of its deployment)."""
        checked = _checked_changes("trigger", _TRIGGER_CHANGES, changes)
        with self._write() as db:
            current = _get(db, TRIGGERS, id)
            if "version_id" in checked:
                self._version_of(db, self._deployment(db, current.deployment_id), checked["version_id"])
            updated = replace(current, **checked)
            _update(db, TRIGGERS, updated, set(checked))
        return updated

    def delete_trigger(self, id: str) -> None:
        """Delete a trigger and what it has seen; the runs it started stay, without a trigger."""
        with self._write() as db:
            _get(db, TRIGGERS, id)
            db.execute("DELETE FROM triggers WHERE id = ?", (id,))

    def trigger_saw(self, trigger_id: str, key: str) -> bool:
        """Record that the trigger has seen ``key`` (a file or object name): False the first time,
        True ever after, atomically, so two watchers never both act on one file."""
        _text("key", key, empty=False)
        with self._write() as db:
            _get(db, TRIGGERS, trigger_id)
            cursor = db.execute(
                "INSERT OR IGNORE INTO trigger_seen (trigger_id, key, seen_at) VALUES (?, ?, ?)",
                (trigger_id, key, _time_text(now())),
            )
        return cursor.rowcount == 0

    def add_trigger_run(self, trigger_id: str, key: str, inputs: Sequence[str], output: str) -> Run | None:
        """What a trigger does with ``key`` (a file or object name) in one transaction: record it seen
        and add a ``pending`` run of the trigger's version over ``inputs``, with the trigger's
        parameters. None, and nothing written,
        when the trigger saw ``key`` before or is disabled: one run per file, however often asked."""
        _text("key", key, empty=False)
        checked_inputs = tuple(_text("an input", item, empty=False) for item in inputs)
        _text("output", output, empty=False)
        with self._write() as db:
            trigger = _get(db, TRIGGERS, trigger_id)
            if not trigger.enabled:
                return None
            cursor = db.execute(
                "INSERT OR IGNORE INTO trigger_seen (trigger_id, key, seen_at) VALUES (?, ?, ?)",
                (trigger_id, key, _time_text(now())),
            )
            if cursor.rowcount == 0:
                return None
            record = Run(
                new_id("run"),
                trigger.deployment_id,
                trigger.version_id,
                RunState.PENDING,
                checked_inputs,
                output,
                dict(trigger.parameters),
                trigger_id=trigger.id,
            )
            _insert(db, RUNS, record)
        return record


def _count_unfinished_runs(db: sqlite3.Connection, column: str, value: str) -> int:
    final = sorted(state.value for state in FINAL_RUN_STATES)
    return _count(db, "runs", f"{column} = ? AND state NOT IN (?, ?, ?)", value, *final)
