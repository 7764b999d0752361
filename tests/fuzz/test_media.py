"""The ABEJA image and video decoders on random and damaged files: a decoded array within the limits,
or `MediaError` (400), never another exception, whether at open or while frames are read."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferd.dialects.abeja.media import MediaError, decode_inputs
from tests.dialects.abeja.media_files import image_bytes, video_bytes

MAX_PIXELS = 64 * 64
MAX_SECONDS = 0.5


@functools.cache
def samples() -> dict[str, bytes]:
    return {
        "image/png": image_bytes(32, 24, format="PNG"),
        "image/jpeg": image_bytes(32, 24, format="JPEG"),
        "video/mp4": video_bytes(".mp4", frames=4, fps=10, width=32, height=24),
        "video/x-matroska": video_bytes(".mkv", frames=4, fps=10, width=32, height=24),
    }


@st.composite
def damaged(draw: st.DrawFn) -> tuple[str, bytes]:
    """A valid file of a random type with bytes overwritten, cut or inserted, or plain random bytes."""
    kind = draw(st.sampled_from(sorted(samples())))
    data = bytearray(samples()[kind])
    how = draw(st.sampled_from(["flip", "cut", "insert", "random"]))
    if how == "random":
        return kind, draw(st.binary(max_size=400))
    at = draw(st.integers(0, len(data) - 1))
    if how == "flip":
        for offset in draw(st.lists(st.integers(0, 64), min_size=1, max_size=8)):
            data[(at + offset) % len(data)] ^= draw(st.integers(1, 255))
    elif how == "cut":
        del data[at : at + draw(st.integers(1, 200))]
    else:
        data[at:at] = draw(st.binary(min_size=1, max_size=50))
    return kind, bytes(data)


@given(damaged())
def test_damaged_media_decode_within_limits_or_are_refused(case: tuple[str, bytes]) -> None:
    kind, body = case
    try:
        inputs = decode_inputs(body, kind, max_image_pixels=MAX_PIXELS, max_video_seconds=MAX_SECONDS)
        try:
            for item in inputs:
                image = item if isinstance(item, np.ndarray) else item["image"]
                assert image.ndim == 3 and image.shape[2] == 3
                assert image.shape[0] * image.shape[1] <= MAX_PIXELS
                if isinstance(item, dict):
                    assert item["pos_msec"] <= MAX_SECONDS * 1000
        finally:
            close = getattr(inputs, "close", None)
            if close is not None:
                close()
    except MediaError:
        pass


def test_a_video_longer_than_the_limit_is_refused_before_any_frame() -> None:
    body = video_bytes(".mp4", frames=30, fps=10, width=32, height=24)  # 3 s
    with pytest.raises(MediaError, match="s long, more than the limit of 1 s"):
        decode_inputs(body, "video/mp4", max_image_pixels=MAX_PIXELS, max_video_seconds=1.0)


def test_video_frames_over_the_pixel_limit_are_refused() -> None:
    body = video_bytes(".mp4", frames=2, fps=10, width=128, height=96)
    with pytest.raises(MediaError, match="pixels, more than the limit"):
        decode_inputs(body, "video/mp4", max_image_pixels=MAX_PIXELS)
