"""The process of one ABEJA training job: imports the version's handler (``file:function``, from the
unpacked version, its working folder) and calls it with the job's context, as ABEJA's training
runtime did. A handler that raises ends the process with status 1, its traceback in the job's log and
its last line in the file ``INFERD_TRAINING_FAILURE_FILE`` names (the job's reason).

Standard library only, and run by its path, not imported from inferd: it runs under the interpreter
the version's image maps to (``INFERD_ABEJA_TRAINING_PYTHONS``), which need not have inferd.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from typing import Any


class Context(dict):  # type: ignore[type-arg]
    """ABEJA's training context: ``context.datasets`` and ``context['datasets']`` alike."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _context() -> Context:
    try:
        datasets = json.loads(os.environ.get("TRAINING_JOB_DATASETS") or "{}")
    except ValueError:
        datasets = {}
    return Context(
        datasets=datasets if isinstance(datasets, dict) else {},
        job_definition_name=os.environ.get("TRAINING_JOB_DEFINITION_NAME"),
        training_job_id=os.environ.get("TRAINING_JOB_ID"),
        organization_id=os.environ.get("ABEJA_ORGANIZATION_ID"),
        training_result_dir=os.environ.get("ABEJA_TRAINING_RESULT_DIR"),
    )


def _failed(reason: str) -> int:
    path = os.environ.get("INFERD_TRAINING_FAILURE_FILE")
    if path:
        with open(path, "w", encoding="utf-8") as file:
            file.write(reason[:2000])
    return 1


def main(handler: str) -> int:
    module_name, _, function_name = handler.partition(":")
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
        function = getattr(module, function_name or "handler")
    except BaseException as exc:  # the user's module: anything may come
        traceback.print_exc()
        return _failed(f"cannot load handler {handler}: {type(exc).__name__}: {exc}")
    try:
        function(_context())
    except SystemExit as exc:
        if exc.code in (None, 0):
            return 0
        return _failed(f"the handler exited with {exc.code!r}")
    except BaseException as exc:
        traceback.print_exc()
        return _failed(f"the handler raised {type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
