"""Run a console script (``inferd``, ``uvicorn``) with a start-up timeline recorded inside its process,
for ``bench/cold_start.py --phases`` (issue 26: where a cold start's time goes).

    python bench/start_probe.py OUT.json /path/to/venv/bin/inferd serve examples/iris ...

An audit hook (PEP 578: no code of the server is patched) notes, on ``time.monotonic()`` (one clock
for the whole machine, so the launching bench can put its own launch and first answer on the same
line), when the first and the last module of each top-level package was imported, when a
``.joblib`` / ``.pkl`` file was opened (the unpickling starts), and when a socket was first bound; a
``gc.callbacks`` entry adds up the garbage collector's pauses. The record is written to OUT.json
when the process exits (the bench stops it with SIGTERM: uvicorn, after its graceful shutdown,
puts back the handler it found and raises the signal again, so the probe's handler for it exits
through ``atexit`` rather than letting the default action kill the process first). The hook costs a
few microseconds per audited event: the bench reports the probed start's total beside the unprobed
median so the distortion shows.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import runpy
import signal
import sys
import time

STARTED = time.monotonic()
MODEL_SUFFIXES = (".joblib", ".pkl", ".pickle")
first: dict[str, float] = {}
last: dict[str, float] = {}
marks: dict[str, float] = {"probe started": STARTED}
gc_pause = {"seconds": 0.0, "full": 0.0, "count": 0}
_gc_began = [0.0]


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event == "import":
        now, top = time.monotonic(), str(args[0]).partition(".")[0]
        first.setdefault(top, now)
        last[top] = now
    elif event == "open" and isinstance(args[0], str) and args[0].endswith(MODEL_SUFFIXES):
        marks.setdefault("model file opened", time.monotonic())
    elif event == "socket.bind":
        marks.setdefault("first socket bound", time.monotonic())


def _gc(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        _gc_began[0] = time.perf_counter()
        return
    took = time.perf_counter() - _gc_began[0]
    gc_pause["seconds"] += took
    gc_pause["count"] += 1
    if info["generation"] == 2:
        gc_pause["full"] += took


def _write(path: str) -> None:
    record = {"first": first, "last": last, "marks": marks, "gc": gc_pause}
    with open(path, "w") as out:
        json.dump(record, out)


def _exit_on_term(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main() -> None:
    out, script = sys.argv[1], sys.argv[2]
    sys.addaudithook(_audit)
    gc.callbacks.append(_gc)
    atexit.register(_write, out)
    signal.signal(signal.SIGTERM, _exit_on_term)
    sys.argv = sys.argv[2:]
    sys.path[0] = os.path.dirname(script)  # as the console script would have it
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
