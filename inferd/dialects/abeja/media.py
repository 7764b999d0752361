"""The body of an 18.10 request, decoded into the handler's ``input_iter`` by its MIME type.

JSON is one parsed document; a JPEG or PNG is one RGB array (HxWx3 uint8); a video is one
``{"image", "pos_frames", "pos_msec"}`` per frame, decoded lazily with PyAV so a long video streams
through the handler instead of filling memory. Everything that can be checked up front is checked
when `decode_inputs` is called, before the handler runs: the JSON parses, the image fits the pixel
limit and decodes, the video container opens, has a video stream, and is no longer than the duration
limit with frames within the pixel limit; frames past the duration limit fail while decoding, so a
container that understates its duration gains nothing.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from inferd.core.settings import DEFAULT_MAX_IMAGE_PIXELS
from inferd.protocols.status import without_addresses

JSON_TYPE = "application/json"
IMAGE_TYPES = frozenset({"image/jpeg", "image/png"})
VIDEO_TYPES = frozenset({"video/mp4", "video/avi", "video/x-matroska", "video/quicktime"})
EXTENSION_TYPES = {
    ".json": JSON_TYPE,
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".png": "image/png",
    ".gif": "image/gif",
    ".mp4": "video/mp4",
    ".avi": "video/avi",
    ".mkv": "video/x-matroska",
    ".mov": "video/quicktime",
}
SUPPORTED = (
    "application/json, image/jpeg, image/png, video/mp4, video/avi, video/x-matroska or video/quicktime"
)


class MediaError(ValueError):
    """The body cannot be decoded for the handler; the message says why (the client sees it)."""


def media_type(content_type: str | None) -> str:
    """``"Image/PNG; q=1"`` → ``"image/png"``."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def content_type_for(path: Path) -> str | None:
    return EXTENSION_TYPES.get(path.suffix.lower())


def decode_inputs(
    source: bytes | Path,
    content_type: str | None,
    *,
    max_image_pixels: int,
    max_video_seconds: float = 3600.0,
) -> Iterator[Any]:
    """The iterator handed to an 18.10 handler; it has ``close()`` (a video's container is open)."""
    kind = media_type(content_type)
    if kind == JSON_TYPE:
        return iter([_json(_read(source))])
    if kind in IMAGE_TYPES:
        return iter([_image(_read(source), kind, max_image_pixels)])
    if kind in VIDEO_TYPES:
        return VideoFrames(source, kind, max_image_pixels, max_video_seconds)
    raise MediaError(f"unsupported Content-Type '{kind or content_type or ''}'; expected {SUPPORTED}")


def _read(source: bytes | Path) -> bytes:
    return source.read_bytes() if isinstance(source, Path) else source


def _json(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MediaError(f"body is not valid JSON: {exc}") from None


def _image(body: bytes, kind: str, max_pixels: int) -> np.ndarray[Any, Any]:
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(body))  # reads the header only
            width, height = image.size
            if width * height > max_pixels:
                raise MediaError(
                    f"image is {width}x{height} = {width * height} pixels, "
                    f"more than the limit of {max_pixels}"
                )
            return np.asarray(image.convert("RGB"))
    except MediaError:
        raise
    except Exception as exc:  # Pillow raises many kinds for bad data
        raise _undecodable(kind, exc) from None


def _undecodable(kind: str, exc: Exception) -> MediaError:
    """The error of a body Pillow or PyAV cannot decode, in their words but without the object
    addresses they put in (``cannot identify image file <_io.BytesIO object at 0x7f...>``)."""
    return MediaError(f"cannot decode {kind} body: {without_addresses(str(exc))}")


class VideoFrames(Iterator[dict[str, Any]]):
    """The frames of a video, decoded one at a time; ``close()`` closes the container."""

    def __init__(
        self,
        source: bytes | Path,
        kind: str,
        max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
        max_seconds: float = 3600.0,
    ) -> None:
        try:
            import av
        except ImportError:
            raise MediaError("video input needs PyAV: pip install 'inferd[video]'") from None
        self.kind = kind
        try:
            self.container = av.open(str(source) if isinstance(source, Path) else io.BytesIO(source), "r")
        except Exception as exc:
            raise _undecodable(kind, exc) from None
        if not self.container.streams.video:
            self.container.close()
            raise MediaError(f"cannot decode {kind} body: it has no video stream")
        self.stream = self.container.streams.video[0]
        self.stream.thread_type = "AUTO"
        self.max_seconds = max_seconds
        problem = self._too_big(max_pixels)
        if problem:
            self.container.close()
            raise MediaError(problem)
        self.frames = self._decode()

    def _too_big(self, max_pixels: int) -> str | None:
        """What makes the video exceed a limit, judged by its headers (None when nothing does)."""
        width, height = self.stream.codec_context.width or 0, self.stream.codec_context.height or 0
        if width * height > max_pixels:
            return (
                f"video frames are {width}x{height} = {width * height} pixels, "
                f"more than the limit of {max_pixels}"
            )
        seconds = self._seconds()
        if seconds is not None and seconds > self.max_seconds:
            return f"video is {seconds:.1f} s long, more than the limit of {self.max_seconds:g} s"
        return None

    def _seconds(self) -> float | None:
        """The duration the container or stream states, else frames over frame rate; None if unknown."""
        if self.container.duration is not None:
            return float(self.container.duration) / 1_000_000  # in av.time_base units
        if self.stream.duration is not None and self.stream.time_base is not None:
            return float(self.stream.duration * self.stream.time_base)
        if self.stream.frames and self.stream.average_rate:
            return float(self.stream.frames / self.stream.average_rate)
        return None

    def _decode(self) -> Generator[dict[str, Any]]:
        time_base = self.stream.time_base
        rate = self.stream.average_rate
        for index, frame in enumerate(self.container.decode(self.stream)):
            if frame.pts is not None and time_base is not None:
                msec = int(frame.pts * time_base * 1000)
            else:
                msec = int(index * 1000 / rate) if rate else 0
            if msec > self.max_seconds * 1000:
                raise MediaError(f"video is longer than the limit of {self.max_seconds:g} s")
            yield {"image": frame.to_ndarray(format="rgb24"), "pos_frames": index, "pos_msec": msec}

    def __next__(self) -> dict[str, Any]:
        try:
            return next(self.frames)
        except (StopIteration, MediaError):
            raise
        except Exception as exc:
            raise _undecodable(self.kind, exc) from None

    def close(self) -> None:
        self.frames.close()
        self.container.close()
