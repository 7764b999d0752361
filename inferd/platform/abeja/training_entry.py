"""The process of one ABEJA training job: imports the version's handler (``file:function``, from the
unpacked version, its working folder) and calls it with the job's context, as ABEJA's training
runtime did. A handler that raises ends the process with status 1, its traceback in the job's log and
its last line in the file ``INFERD_TRAINING_FAILURE_FILE`` names (the job's reason).

Standard library only, and run by its path, not imported from inferd: it runs under the interpreter
the version's image maps to (``INFERD_ABEJA_TRAINING_PYTHONS``), which need not have inferd. It
imports nothing a bare ``python -c`` does not before the handler runs (``json`` only for datasets
that are there, ``traceback`` only on a failure, ``typing`` never): a job's start-up is measured
against that (bench/training_startup.py).
"""

from __future__ import annotations

import os
import sys


class Context(dict):  # type: ignore[type-arg]
    """ABEJA's training context: ``context.datasets`` and ``context['datasets']`` alike."""

    def __getattr__(self, name: str) -> object:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _context() -> Context:
    text = (os.environ.get("TRAINING_JOB_DATASETS") or os.environ.get("DATASETS") or "{}").strip()
    datasets: object = {}
    if text != "{}":
        import json

        try:
            datasets = json.loads(text)
        except ValueError:
            datasets = {}
    return Context(
        datasets=datasets if isinstance(datasets, dict) else {},
        job_definition_name=os.environ.get("TRAINING_JOB_DEFINITION_NAME"),
        training_job_id=os.environ.get("TRAINING_JOB_ID"),
        organization_id=os.environ.get("ABEJA_ORGANIZATION_ID"),
        training_result_dir=os.environ.get("ABEJA_TRAINING_RESULT_DIR"),
    )


def run(handler: str) -> str | None:
    """Import and call the handler (from the working folder); why it failed, or None. Its
    traceback goes to stderr."""
    module_name, _, function_name = handler.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        __import__(module_name)
        function = getattr(sys.modules[module_name], function_name or "handler")
    except BaseException as exc:  # the user's module: anything may come
        _print_traceback()
        return f"cannot load handler {handler}: {type(exc).__name__}: {exc}"
    try:
        function(_context())
    except SystemExit as exc:
        return None if exc.code in (None, 0) else f"the handler exited with {exc.code!r}"
    except BaseException as exc:
        _print_traceback()
        return f"the handler raised {type(exc).__name__}: {exc}"
    return None


def _print_traceback() -> None:
    import traceback

    traceback.print_exc()


def main(handler: str) -> int:
    reason = run(handler)
    if reason is None:
        return 0
    path = os.environ.get("INFERD_TRAINING_FAILURE_FILE")
    if path:
        with open(path, "w", encoding="utf-8") as file:
            file.write(reason[:2000])
    return 1


def spare() -> int:
    """A spare launcher (`inferd.platform.abeja.training_spares`): started ahead, it waits for one
    job, a JSON line on stdin (``cwd``, ``environment``, ``log``, ``handler``), then becomes that
    job's process as if started for it: in its folder, with its environment alone, its output
    appended to its log, nothing on its stdin. The end of stdin (the control process gone) ends it."""
    import json

    line = sys.stdin.readline()
    if not line.strip():
        return 0
    job = json.loads(line)
    os.chdir(job["cwd"])
    os.environ.clear()
    os.environ.update(job["environment"])
    output = os.open(job["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.close(output)
    os.close(nothing)
    return main(job["handler"])


if __name__ == "__main__":
    sys.exit(spare() if sys.argv[1] == "--spare" else main(sys.argv[1]))
