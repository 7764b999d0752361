"""A service's log: rotated by copy and truncate, read on across a rotation, tailed across copies."""

from __future__ import annotations

from pathlib import Path

from inferd.platform.services.logs import NOTE, ServiceLog, quote
from inferd.platform.services.spec import RestartPolicy


def write(log: ServiceLog, *lines: str) -> None:
    with log.open_for_server() as file:
        file.write("".join(f"{line}\n" for line in lines).encode())


def test_rotation_keeps_the_newest_copies(tmp_path: Path) -> None:
    log = ServiceLog(tmp_path / "svc.log", max_bytes=20, backups=2)
    for batch in range(4):
        write(log, f"batch {batch} line a", f"batch {batch} line b")
        assert log.rotate_if_full()
    assert log.size() == 0
    assert log.backup(1).read_text().startswith("batch 3")
    assert log.backup(2).read_text().startswith("batch 2")
    assert not log.backup(3).exists()
    write(log, "batch 4 line a")
    assert log.tail(3) == ["batch 3 line a", "batch 3 line b", "batch 4 line a"]
    assert log.tail(100)[0] == "batch 2 line a"
    assert not log.rotate_if_full()


def test_a_reader_goes_on_across_a_rotation(tmp_path: Path) -> None:
    log = ServiceLog(tmp_path / "svc.log", max_bytes=10)
    write(log, "before the reader")
    reader = log.reader()
    assert reader.read_lines() == []
    write(log, "one")
    with log.open_for_server() as file:
        file.write(b"two, half")
    assert reader.read_lines() == ["one"]
    with log.open_for_server() as file:
        file.write(b" and the rest\nthree\n")
    log.rotate()
    write(log, "four")
    assert reader.read_lines() == ["two, half and the rest", "three", "four"]


def test_tail_of_a_large_file_and_of_no_file(tmp_path: Path) -> None:
    log = ServiceLog(tmp_path / "svc.log")
    assert log.tail() == []
    write(log, *(f"line {n}" for n in range(20_000)))
    assert log.tail(2) == ["line 19998", "line 19999"]
    log.note("stopping")
    assert log.tail(1)[0].startswith(NOTE) and log.tail(1)[0].endswith(" stopping")


def test_quote_prefers_inferd_errors_then_the_last_line() -> None:
    lines = ['{"level":"info"}', "error: cannot listen on 127.0.0.1:80: denied", "try: another port", ""]
    assert quote(lines) == "error: cannot listen on 127.0.0.1:80: denied | try: another port"
    traceback = ["Traceback (most recent call last):", '  File "model.py"', "RuntimeError: no weights"]
    assert quote([*traceback, f"{NOTE}starting again"]) == "RuntimeError: no weights"
    assert quote([]) == "(no output)"


def test_back_off_doubles_up_to_its_cap() -> None:
    policy = RestartPolicy(first_delay=1, max_delay=5)
    assert [policy.delay(n) for n in range(1, 6)] == [1, 2, 4, 5, 5]
