"""ABEJA 18.10 generator handlers over HTTP: inputs by MIME type, context, outputs and errors."""

from __future__ import annotations

import io
import json
import time

import httpx
import numpy as np
import pytest
from PIL import Image

from tests.dialects.abeja.media_files import image_bytes, video_bytes
from tests.servers import RunningServer


def post_json(client: httpx.Client, document: object, **kwargs: object) -> httpx.Response:
    return client.post("/", json=document, **kwargs)  # type: ignore[arg-type]


def test_json_dict_is_the_one_input(legacy: httpx.Client) -> None:
    response = post_json(legacy, {"x": [1, 2]})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"echo": {"x": [1, 2]}}


def test_json_list_and_charset_parameter(legacy: httpx.Client) -> None:
    body = '["é", 2]'.encode()
    response = legacy.post("/", content=body, headers={"content-type": "application/json; charset=utf-8"})
    assert response.json() == {"echo": ["é", 2]}


@pytest.mark.parametrize("fmt", ["JPEG", "PNG"])
def test_image_arrives_as_rgb_array(legacy: httpx.Client, fmt: str) -> None:
    body = image_bytes(40, 30, format=fmt, color=(200, 100, 50))
    response = legacy.post("/", content=body, headers={"content-type": f"image/{fmt.lower()}"})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["shape"] == [30, 40, 3]
    assert answer["dtype"] == "uint8"
    assert np.allclose(answer["mean"], [200, 100, 50], atol=3)


def test_grayscale_png_is_converted_to_rgb(legacy: httpx.Client) -> None:
    body = image_bytes(10, 10, format="PNG", mode="L", color=77)
    answer = legacy.post("/", content=body, headers={"content-type": "image/png"}).json()
    assert answer["shape"] == [10, 10, 3]
    assert answer["mean"] == [77, 77, 77]


def test_video_over_http_yields_one_answer_per_frame(legacy: httpx.Client) -> None:
    body = video_bytes(".mp4", frames=5, fps=10)
    response = legacy.post("/", content=body, headers={"content-type": "video/mp4"})
    assert response.status_code == 200, response.text
    frames = response.json()
    assert [frame["pos_frames"] for frame in frames] == [0, 1, 2, 3, 4]
    assert [frame["pos_msec"] for frame in frames] == [0, 100, 200, 300, 400]
    assert all(frame["shape"] == [48, 64, 3] for frame in frames)
    levels = [frame["level"] for frame in frames]
    assert levels == sorted(levels) and levels[0] < levels[-1]


def test_context_carries_method_headers_and_parameters(legacy: httpx.Client) -> None:
    response = legacy.post(
        "/?threshold=0.5&tag=a",
        json={"action": "context"},
        headers={"Authorization": "Bearer secret", "X-Custom": "Yes"},
    )
    answer = response.json()
    assert answer["method"] == "POST"
    assert answer["parameters"] == {"threshold": "0.5", "tag": "a"}
    assert answer["headers"]["x-custom"] == "Yes"
    assert "authorization" not in answer["headers"]
    assert answer["by_key"] is True


def test_several_yields_are_a_json_array(legacy: httpx.Client) -> None:
    assert post_json(legacy, {"action": "many"}).json() == [1, {"b": 2}, [3.5]]


def test_no_yield_is_an_empty_array(legacy: httpx.Client) -> None:
    response = post_json(legacy, {"action": "none"})
    assert response.status_code == 200
    assert response.json() == []


def test_response_datatype_sets_body_and_headers(legacy: httpx.Client) -> None:
    response = post_json(legacy, {"action": "image"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/jpeg"
    assert response.headers["x-size"] == "8x6"
    image = Image.open(io.BytesIO(response.content))
    assert image.size == (8, 6)


@pytest.mark.parametrize(
    ("action", "status", "error", "description"),
    [
        ("invalid", 400, "bad_request", "need a number"),
        ("model", 500, "internal_server_error", "model blew up"),
        ("crash", 500, "internal_server_error", "'boom'"),
        (
            "mixed",
            500,
            "internal_server_error",
            "a datatypes.Response must be the only value a handler yields",
        ),
    ],
)
def test_errors_have_the_abeja_body(
    legacy: httpx.Client, action: str, status: int, error: str, description: str
) -> None:
    response = post_json(legacy, {"action": action})
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"error": error, "error_description": description}
    assert post_json(legacy, {"ok": 1}).status_code == 200  # still serving


@pytest.mark.parametrize(
    ("body", "content_type", "fragment"),
    [
        (b"hello", "text/plain", "unsupported Content-Type 'text/plain'"),
        (b"{nope", "application/json", "not valid JSON"),
        (b"not an image", "image/png", "cannot decode image/png"),
        (b"not a video", "video/mp4", "cannot decode video/mp4"),
        (video_bytes(".mp4", frames=5)[:-400], "video/mp4", "cannot decode video/mp4"),
    ],
    ids=["text", "json", "image", "video", "truncated-video"],
)
def test_undecodable_input_is_invalid_input(
    legacy: httpx.Client, body: bytes, content_type: str, fragment: str
) -> None:
    response = legacy.post("/", content=body, headers={"content-type": content_type})
    assert response.status_code == 400
    answer = response.json()
    assert answer["error"] == "bad_request"
    assert fragment in answer["error_description"]


def test_an_image_over_the_pixel_limit_is_refused_before_its_pixels_are_decoded(
    legacy_server: RunningServer, legacy: httpx.Client
) -> None:
    """8000 x 8000 pixels in a PNG of a few hundred KB: under Pillow's limit, over inferd's default
    of 4096 x 4096; refused from the header alone, so the server's peak memory does not grow."""
    body = image_bytes(8000, 8000, format="PNG", color=(10, 20, 30))
    assert len(body) < 300_000
    before, started = legacy_server.peak_memory(), time.monotonic()
    response = legacy.post("/", content=body, headers={"content-type": "image/png"})
    took, grown = time.monotonic() - started, legacy_server.peak_memory() - before
    assert response.status_code == 400
    assert response.json() == {
        "error": "bad_request",
        "error_description": "image is 8000x8000 = 64000000 pixels, more than the limit of 16777216",
    }
    assert took < 3.0
    assert grown < 100 * 2**20, f"the server's peak memory grew by {grown / 2**20:.0f} MiB"
    assert post_json(legacy, {"ok": 1}).status_code == 200  # still serving


def test_decoding_errors_carry_no_object_address(legacy: httpx.Client) -> None:
    response = legacy.post("/", content=b"\x89PNG not really", headers={"content-type": "image/png"})
    assert response.status_code == 400
    description = response.json()["error_description"]
    assert description == "cannot decode image/png body: cannot identify image file"
    assert " at 0x" not in description


def test_health_check(legacy: httpx.Client) -> None:
    response = legacy.get("/health_check")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_v2_sends_each_json_element_through_the_handler(legacy: httpx.Client) -> None:
    request = {"inputs": [{"name": "json", "shape": [2], "datatype": "BYTES", "data": ['{"a": 1}', "[2]"]}]}
    response = legacy.post("/v2/models/legacy/infer", json=request)
    assert response.status_code == 200, response.text
    output = response.json()["outputs"][0]
    assert output["name"] == "json"
    assert [json.loads(item) for item in output["data"]] == [{"echo": {"a": 1}}, {"echo": [2]}]


def test_v2_reports_invalid_input_as_400(legacy: httpx.Client) -> None:
    request = {
        "inputs": [{"name": "json", "shape": [1], "datatype": "BYTES", "data": ['{"action": "invalid"}']}]
    }
    response = legacy.post("/v2/models/legacy/infer", json=request)
    assert response.status_code == 400
    assert "need a number" in response.json()["error"]
