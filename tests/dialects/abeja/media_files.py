"""Real images and videos made in the test: Pillow encodes the images, PyAV the videos."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

CONTAINERS = {
    ".mp4": ("mp4", "h264"),
    ".avi": ("avi", "mpeg4"),
    ".mkv": ("matroska", "h264"),
    ".mov": ("mov", "h264"),
}


def image_bytes(
    width: int, height: int, *, format: str = "JPEG", mode: str = "RGB", color: Any = (255, 0, 0)
) -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, (width, height), color).save(buffer, format=format)
    return buffer.getvalue()


def frame_level(index: int) -> int:
    """The gray level of frame ``index``: brighter frame after frame, so tests can check the order."""
    return 20 + (30 * index) % 220


def write_video(path: Path, *, frames: int = 10, fps: int = 10, width: int = 64, height: int = 48) -> Path:
    import av

    container_format, codec = CONTAINERS[path.suffix]
    with av.open(str(path), "w", format=container_format) as container:
        stream = container.add_stream(codec, rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for index in range(frames):
            pixels = np.full((height, width, 3), frame_level(index), np.uint8)
            container.mux(stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")))
        container.mux(stream.encode())
    return path


def video_bytes(suffix: str, **options: int) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        return write_video(Path(folder) / f"video{suffix}", **options).read_bytes()
