"""A broken model in a polled repository is logged once per change of its files (issue 43 item 10),
not at every poll: ``inferd serve --repository DIR --repository-poll 0.2`` logged the same ``cannot
serve model`` line five times a second, and a changed model whose load fails was loaded (and its
traceback logged) again at every poll while its old version kept serving.

Counted over about fifteen polls of a real server: the lines of each error, and the loads the
failing model's code ran (it appends to a file of the test's at each load)."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

from tests.dialects.repository.conftest import answer, native, write, x_request, y_of
from tests.dialects.repository.test_serving import wait_for
from tests.servers import serve

POLL = 0.2
#: How long a count is watched: many polls, each of which used to log again.
POLLS_WATCHED = 15 * POLL


def failing_load(counter: Path) -> str:
    """A native model whose load() notes itself in ``counter``, then raises."""
    return textwrap.dedent(f"""
        import inferd

        class Failing(inferd.Model):
            def load(self):
                with open({str(counter)!r}, "a") as out:
                    out.write("load\\n")
                raise RuntimeError("boom at load")

            def predict(self, inputs):
                return {{"y": inputs["x"]}}
    """)


def serving(url: str, model: str, y: float) -> bool:
    """Whether ``model`` answers ``y`` to x = 1 now (not yet, or no longer, is False)."""
    found = answer(url, model, x_request(1.0))
    return found.status_code == 200 and found.json()["outputs"][0]["data"] == [y]


def lines_with(log: str, text: str) -> int:
    return sum(text in line for line in log.splitlines())


def test_a_broken_model_is_logged_once_per_change_of_its_folder(tmp_path: Path) -> None:
    root = tmp_path / "models"
    write(root / "steady", {"model.py": native(1.0)})
    write(root / "changing", {"model.py": native(2.0)})
    counter = tmp_path / "loads.txt"
    with serve(f"--repository={root}", "--repository-poll", str(POLL)) as server:
        url = server.http_url
        started = time.monotonic()
        write(root / "broken", {"model.py": "raise RuntimeError('boom at import')\n"})
        write(root / "changing", {"model.py": failing_load(counter)})
        server.wait_for_log("boom at import")
        server.wait_for_log("boom at load")
        time.sleep(POLLS_WATCHED)
        log = server.log
        assert lines_with(log, "cannot serve model broken") == 1, log
        assert lines_with(log, "loading model changing failed") == 1, log
        assert counter.read_text() == "load\n"  # its load is not tried again while its files stay
        assert y_of(url, "changing", 1.0) == [2.0]  # the old version serves meanwhile
        assert y_of(url, "steady", 1.0) == [1.0]

        # a change of the broken folder is told, once, even when it fails the same way
        write(root / "broken", {"model.py": "raise RuntimeError('boom at import')  # tried again\n"})
        wait_for(lambda: lines_with(server.log, "cannot serve model broken") == 2)
        # and a change of the failing model is loaded, once
        write(root / "changing", {"model.py": failing_load(counter) + "# tried again\n"})
        wait_for(lambda: counter.read_text() == "load\n" * 2)
        time.sleep(POLLS_WATCHED)
        log = server.log
        assert lines_with(log, "cannot serve model broken") == 2, log
        assert lines_with(log, "loading model changing failed") == 2, log
        assert counter.read_text() == "load\n" * 2

        # fixed, both serve; broken again the same way, that is told again
        write(root / "changing", {"model.py": native(5.0)})
        write(root / "broken", {"model.py": native(3.0)})
        wait_for(lambda: serving(url, "broken", 3.0) and serving(url, "changing", 5.0))
        write(root / "broken", {"model.py": "raise RuntimeError('boom at import')\n"})
        wait_for(lambda: lines_with(server.log, "cannot serve model broken") == 3)
        assert y_of(url, "broken", 1.0) == [3.0]  # the last good version keeps serving
        elapsed = time.monotonic() - started
    # over the whole test, one line per change, however many polls it took
    polls = elapsed / POLL
    assert polls > 30 and lines_with(server.log, "boom at import") == 3, server.log
