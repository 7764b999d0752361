"""ABEJA benchmark (issue 6): the dialect layer's cost on a JSON handler, and video decoding speed.

1. JSON: a 19.04 handler computing a price with tax, served by ``inferd serve main:handler
   --dialect abeja``, against a bare Starlette app on uvicorn (uvloop, httptools) doing the same
   work per request (``json.load`` the body, compute, ``json.dumps`` the answer) and nothing else.
   wrk loads them in alternation; the table shows inferd's req/s as a ratio of the floor's.
   Target: at least 0.80 at concurrency 16.
2. Video: a 10 s 640x360 30 fps MP4 (H.264, made here with PyAV) posted to an 18.10 handler that
   counts the frames, in-process through the same `AbejaModel.answer` the server uses, pinned to
   one core. Target: decoded at least 1.5x faster than real time.

    .venv/bin/python bench/abeja.py [--duration 10] [--rounds 3] [--skip-json] [--skip-video]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from loadgen import ROOT, start_inferd, wrk

JSON_TARGET = 0.80
VIDEO_TARGET = 1.5
BODY = '{"item": "coffee", "price": 1080}'
HANDLER = """
import json


def tax(document):
    price = document["price"]
    tax = int(price * 0.08)
    return {"item": document["item"], "price": price, "tax": tax, "total": price + tax}


def handler(request, context):
    return {"content_type": "application/json", "content": tax(json.load(request))}
"""
FLOOR = """
import json

from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from main import tax


async def endpoint(request):
    answer = json.dumps(tax(json.loads(await request.body())))
    return Response(answer, media_type="application/json")


app = Starlette(routes=[Route("/", endpoint, methods=["POST"])])
"""
COUNTER = """
def handler(input_iter, context):
    yield {"frames": sum(1 for frame in input_iter)}
"""


def start_floor(folder: Path) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    command = [
        str(ROOT / ".venv" / "bin" / "uvicorn"),
        "floor:app",
        "--port",
        str(port),
        "--loop",
        "uvloop",
        "--http",
        "httptools",
        "--no-access-log",
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(command, cwd=folder, text=True, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            subprocess.run(["curl", "-sf", "-X", "POST", "-d", BODY, url], check=True, capture_output=True)
            return process, url
        except subprocess.CalledProcessError:
            time.sleep(0.1)
    raise SystemExit("the floor app did not start")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def bench_json(args: argparse.Namespace, folder: Path) -> bool:
    (folder / "main.py").write_text(textwrap.dedent(HANDLER))
    (folder / "floor.py").write_text(textwrap.dedent(FLOOR))
    inferd, inferd_url = start_inferd("main:handler", "--dialect", "abeja", cwd=folder)
    floor, floor_url = start_floor(folder)
    try:
        urls = {"inferd": inferd_url + "/", "floor": floor_url + "/"}
        print(f"{'concurrency':>11}  {'inferd req/s':>12}  {'floor req/s':>11}  {'inferd / floor':>14}")
        verdict = True
        for concurrency in args.concurrency:
            rates: dict[str, list[float]] = {"inferd": [], "floor": []}
            for _ in range(args.rounds):
                for name, url in urls.items():
                    wrk(url, BODY, concurrency, 2)  # warm-up
                    rates[name].append(wrk(url, BODY, concurrency, args.duration))
            ours, floor_rate = statistics.median(rates["inferd"]), statistics.median(rates["floor"])
            print(f"{concurrency:>11}  {ours:>12,.0f}  {floor_rate:>11,.0f}  {ours / floor_rate:>13.2f}x")
            if concurrency == 16:
                verdict = ours / floor_rate >= JSON_TARGET
        print(f"target: ABEJA JSON handler >= {JSON_TARGET:.0%} of the floor at concurrency 16: ", end="")
        print("PASS" if verdict else "FAIL")
        return verdict
    finally:
        for process in (inferd, floor):
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)


def make_video(path: Path, seconds: int = 10, fps: int = 30, width: int = 640, height: int = 360) -> Path:
    """A moving gradient with noise, so the encoder has real work and the decoder real frames
    (a few MB for 10 s, like a camera clip)."""
    import av
    import numpy as np

    columns = np.arange(width, dtype=np.uint16)
    noise = np.random.default_rng(0)
    with av.open(str(path), "w", format="mp4") as container:
        stream = container.add_stream("h264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for index in range(seconds * fps):
            row = ((columns + index * 4) % 256).astype(np.uint8)
            pixels = np.broadcast_to(row[None, :, None], (height, width, 3)).copy()
            pixels += noise.integers(0, 24, (height, width, 3), dtype=np.uint8)
            container.mux(stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")))
        container.mux(stream.encode())
    return path


def bench_video(folder: Path) -> bool:
    """Decode in a child pinned to one core, so the figure is per core whatever the machine has."""
    video = make_video(folder / "clip.mp4")
    (folder / "counter.py").write_text(textwrap.dedent(COUNTER))
    script = textwrap.dedent(f"""
        import os, resource, sys, time
        from pathlib import Path
        os.sched_setaffinity(0, {{0}})
        os.chdir({str(folder)!r})
        from inferd.dialects.abeja.service import AbejaModel, Call
        model = AbejaModel("counter:handler")
        model.load()
        started = time.perf_counter()
        answer = model.answer(Call("POST", "video/mp4", [], Path("clip.mp4")))
        elapsed = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(answer.status, answer.body.decode(), elapsed, peak)
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=folder
    )
    status, body, elapsed, peak_kib = done.stdout.split()
    seconds = 10.0
    speed = seconds / float(elapsed)
    print(f"video: {video.stat().st_size / 1e6:.1f} MB, 10 s of 640x360 at 30 fps, answer {status} {body}")
    print(f"decoded through the 18.10 handler on one core in {float(elapsed):.2f} s: {speed:.1f}x real time")
    print(f"peak RSS of the decoding process: {int(peak_kib) / 1024:.0f} MiB (frames are streamed)")
    verdict = speed >= VIDEO_TARGET
    print(f"target: >= {VIDEO_TARGET}x real time on one core: {'PASS' if verdict else 'FAIL'}")
    return verdict


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per measured run [10]")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the two servers [3]")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--skip-json", action="store_true")
    parser.add_argument("--skip-video", action="store_true")
    args = parser.parse_args()
    if not args.skip_json and shutil.which("wrk") is None:
        print("wrk is missing: sudo apt-get install -y wrk", file=sys.stderr)
        return 2
    passed = True
    with tempfile.TemporaryDirectory(prefix="abeja-bench-") as tmp:
        if not args.skip_json:
            passed &= bench_json(args, Path(tmp))
        if not args.skip_video:
            passed &= bench_video(Path(tmp))
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
