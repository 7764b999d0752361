"""``inferd run-local``, ``run`` and ``run-local-server``: ABEJA's local commands without Docker."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
from pathlib import Path

import httpx
from PIL import Image

from tests.dialects.abeja.conftest import LEGACY, RUNTIME
from tests.dialects.abeja.media_files import image_bytes, video_bytes
from tests.servers import inferd_command, with_this_tree

ENDPOINT = re.compile(r"Endpoint : (http://localhost:\d+)\n")


def inferd(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run inferd as a user would: without the variables run-local sets itself."""
    inherited = {
        key: value for key, value in os.environ.items() if key not in ("PYTHONUNBUFFERED", "HANDLER")
    }
    return subprocess.run(
        inferd_command(*args),
        capture_output=True,
        cwd=cwd,
        env=with_this_tree({**inherited, **(env or {})}),
        timeout=120,
    )


def write(folder: Path, name: str, content: bytes) -> Path:
    (folder / name).write_bytes(content)
    return folder / name


def test_run_local_prints_json_indented_by_four(tmp_path: Path) -> None:
    request = write(tmp_path, "in.json", b'{"x":   "\xc3\xa9"}')
    done = inferd(LEGACY, "run-local", "--handler", "main:handler", "--input", str(request))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == json.dumps({"echo": {"x": "é"}}, indent=4) + "\n"
    assert b"legacy handler imported" in done.stderr  # the handler's prints go to the log


def test_run_local_writes_images_raw(tmp_path: Path) -> None:
    request = write(tmp_path, "in.json", b'{"action": "image"}')
    done = inferd(LEGACY, "run-local", "-h", "main:handler", "-i", str(request), "-q")
    assert done.returncode == 0, done.stderr
    assert Image.open(io.BytesIO(done.stdout)).size == (8, 6)
    assert b"legacy handler imported" not in done.stderr


def test_run_local_sends_images_and_videos(tmp_path: Path) -> None:
    picture = write(tmp_path, "cat.PNG", image_bytes(4, 2, format="PNG"))
    done = inferd(LEGACY, "run-local", "-h", "main:handler", "-i", str(picture), "-q")
    assert json.loads(done.stdout)["shape"] == [2, 4, 3]
    video = write(tmp_path, "clip.mkv", video_bytes(".mkv", frames=3))
    done = inferd(LEGACY, "run-local", "-h", "main:handler", "-i", str(video), "-q")
    assert [frame["pos_frames"] for frame in json.loads(done.stdout)] == [0, 1, 2]


def test_run_local_sets_the_environment(tmp_path: Path) -> None:
    request = write(tmp_path, "in.json", b'{"case": "env"}')
    done = inferd(RUNTIME, "run-local", "-h", "main:handler", "-i", str(request), "-e", "USER_VAR:a:b", "-q")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["user"] == "a:b"
    assert answer["result_dir"] == str(RUNTIME)  # run-local's default is "."
    names = ["HANDLER", "SERVICE_TYPE", "PYTHONUNBUFFERED", "ABEJA_ORGANIZATION_ID"]
    request = write(tmp_path, "env.json", json.dumps({"action": "env", "names": names}).encode())
    done = inferd(LEGACY, "run-local", "-h", "main:handler", "-i", str(request), "-o", "123", "-q")
    assert json.loads(done.stdout) == {
        "HANDLER": "main:handler",
        "SERVICE_TYPE": "HTTP",
        "PYTHONUNBUFFERED": "x",
        "ABEJA_ORGANIZATION_ID": "123",
    }


def test_run_local_reports_a_failed_request(tmp_path: Path) -> None:
    request = write(tmp_path, "in.json", b'{"action": "crash"}')
    done = inferd(LEGACY, "run-local", "-h", "main:handler", "-i", str(request), "-q")
    assert done.returncode == 1
    assert done.stdout == b""
    stderr = done.stderr.decode()
    assert "[error] failed to send request : HTTP Error 500: Internal Server Error" in stderr
    assert "KeyError: 'boom'" in stderr  # the server log comes with the error


def test_run_local_refuses_what_the_cli_did_not_send(tmp_path: Path) -> None:
    request = write(tmp_path, "in.txt", b"hello")
    done = inferd(LEGACY, "run-local", "-h", "main:handler", "-i", str(request))
    assert done.returncode == 1
    assert b"[error] not supported file type: in.txt" in done.stderr


def test_run_local_bad_options(tmp_path: Path) -> None:
    request = write(tmp_path, "in.json", b"{}")
    done = inferd(LEGACY, "run-local", "-h", "main:handler", "-i", str(request), "-e", "1BAD:x")
    assert done.returncode == 2
    assert b"invalid environment variable '1BAD:x'" in done.stderr
    done = inferd(LEGACY, "run-local", "-h", "nomodule:handler", "-i", str(request), "-q")
    assert done.returncode == 1
    assert b"[error] cannot load handler nomodule:handler" in done.stderr


def test_batch_run_writes_one_answer_per_input(tmp_path: Path) -> None:
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    write(inputs, "a.json", b'{"n": 1}')
    write(inputs, "b.jpg", image_bytes(6, 4))
    write(inputs, "c.mp4", video_bytes(".mp4", frames=2))
    write(inputs, "d.txt", b"unknown type")
    invalid = write(tmp_path, "e.json", b'{"action": "invalid"}')
    out = tmp_path / "out"
    done = inferd(
        LEGACY, "run", "-h", "main:handler", "--input", str(inputs), str(invalid), "--output", str(out)
    )
    assert done.returncode == 1  # two inputs failed
    assert sorted(path.name for path in out.iterdir()) == ["a.json", "b.json", "c.json"]
    assert json.loads((out / "a.json").read_bytes()) == {"echo": {"n": 1}}
    assert json.loads((out / "b.json").read_bytes())["shape"] == [4, 6, 3]
    assert len(json.loads((out / "c.json").read_bytes())) == 2
    stderr = done.stderr.decode()
    assert "d: " in stderr and "unsupported Content-Type 'text/plain'" in stderr
    assert "e: status 400" in stderr
    assert "5 inputs: 3 written" in stderr


def test_batch_run_from_the_input_variable(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ("-h", "main:handler", "--output", str(out), "-q", "--json")
    done = inferd(LEGACY, "run", *args, env={"INPUT": '{"k": 2}'})
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "input.json").read_bytes()) == {"echo": {"k": 2}}
    assert json.loads(done.stdout) == {"inputs": 1, "written": 1, "failed": 0, "output": str(out)}
    datalake = {"INPUT": '{"$datalake:1": "1234/5678"}'}
    done = inferd(LEGACY, "run", "-h", "main:handler", "--output", str(out), env=datalake)
    assert done.returncode == 1
    assert b"DataLake" in done.stderr


def test_run_local_server_prints_the_endpoint_and_serves() -> None:
    with subprocess.Popen(
        inferd_command("run-local-server", "--handler", "main:handler"),
        cwd=RUNTIME,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            lines = iter(process.stdout.readline, "")
            endpoint = next(match for line in lines if (match := ENDPOINT.fullmatch(line)))
            assert next(lines) == "Handler  : main:handler\n"
            with httpx.Client(base_url=endpoint[1], timeout=30) as client:
                assert client.get("/health_check").json() == {"status": "ok"}
                assert client.post("/", json={"case": "echo"}).json() == {"echo": True}
        finally:
            process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
