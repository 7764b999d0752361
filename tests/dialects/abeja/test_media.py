"""Decoding 18.10 inputs: JSON, images (with the pixel limit) and lazily decoded videos."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from inferd.dialects.abeja.media import MediaError, content_type_for, decode_inputs, media_type
from tests.dialects.abeja.media_files import frame_level, image_bytes, video_bytes, write_video

LIMIT = 89_478_485
VIDEOS = {".mp4": "video/mp4", ".avi": "video/avi", ".mkv": "video/x-matroska", ".mov": "video/quicktime"}


def decode(source: bytes | Path, content_type: str, limit: int = LIMIT) -> list[object]:
    return list(decode_inputs(source, content_type, max_image_pixels=limit))


@pytest.mark.parametrize(
    ("mode", "color", "rgb"),
    [
        ("RGB", (10, 20, 30), [10, 20, 30]),
        ("L", 99, [99] * 3),
        ("RGBA", (1, 2, 3, 0), [1, 2, 3]),
        ("P", 5, None),
    ],
)
def test_png_modes_become_rgb(mode: str, color: object, rgb: list[int] | None) -> None:
    [image] = decode(image_bytes(5, 3, format="PNG", mode=mode, color=color), "image/png")
    assert isinstance(image, np.ndarray)
    assert image.shape == (3, 5, 3) and image.dtype == np.uint8
    if rgb is not None:
        assert image[0, 0].tolist() == rgb


def test_jpeg_from_a_file(tmp_path: Path) -> None:
    (tmp_path / "cat.jpg").write_bytes(image_bytes(8, 8, color=(0, 200, 0)))
    [image] = decode(tmp_path / "cat.jpg", "image/jpeg")
    assert np.allclose(np.asarray(image).reshape(-1, 3).mean(0), [0, 200, 0], atol=3)


def test_image_over_the_pixel_limit_is_refused() -> None:
    with pytest.raises(MediaError, match="image is 100x50 = 5000 pixels, more than the limit of 4999"):
        decode(image_bytes(100, 50, format="PNG"), "image/png", limit=4999)


def test_truncated_image() -> None:
    with pytest.raises(MediaError, match="cannot decode image/jpeg body"):
        decode(image_bytes(50, 50)[:200], "image/jpeg")


@pytest.mark.parametrize("suffix", sorted(VIDEOS))
def test_video_frames_in_order(suffix: str) -> None:
    frames = decode(video_bytes(suffix, frames=4, fps=20), VIDEOS[suffix])
    assert [frame["pos_frames"] for frame in frames] == [0, 1, 2, 3]  # type: ignore[index]
    assert [frame["pos_msec"] for frame in frames] == [0, 50, 100, 150]  # type: ignore[index]
    for index, frame in enumerate(frames):
        image = frame["image"]  # type: ignore[index]
        assert image.shape == (48, 64, 3) and image.dtype == np.uint8
        assert abs(int(image.mean()) - frame_level(index)) <= 6


def test_video_is_decoded_lazily_and_closes(tmp_path: Path) -> None:
    path = write_video(tmp_path / "long.mp4", frames=60)
    frames = decode_inputs(path, "video/mp4", max_image_pixels=LIMIT)
    first = next(frames)
    assert first["pos_frames"] == 0
    frames.close()  # type: ignore[attr-defined]
    with pytest.raises(StopIteration):
        next(frames)


def test_not_a_video_fails_before_the_handler_runs() -> None:
    with pytest.raises(MediaError, match="cannot decode video/mp4 body"):
        decode_inputs(b"not a video", "video/mp4", max_image_pixels=LIMIT)


def test_json() -> None:
    assert decode(b'{"a": [1]}', "application/json; charset=utf-8") == [{"a": [1]}]
    with pytest.raises(MediaError, match="body is not valid JSON"):
        decode(b"{", "application/json")


@pytest.mark.parametrize("content_type", ["text/plain", "", "image/gif"])
def test_unsupported_types(content_type: str) -> None:
    with pytest.raises(MediaError, match="unsupported Content-Type"):
        decode(b"x", content_type)


def test_types_from_names() -> None:
    assert media_type(" Image/PNG ; q=1") == "image/png"
    assert media_type(None) == ""
    assert content_type_for(Path("a/B.JPEG")) == "image/jpeg"
    assert content_type_for(Path("clip.mkv")) == "video/x-matroska"
    assert content_type_for(Path("notes.txt")) is None
