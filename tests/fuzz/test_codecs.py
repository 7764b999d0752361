"""Properties of the wire codecs: what encodes decodes back, and bad input raises inferd's typed
error (or the dialect's own), never anything else."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from inferd.core.errors import InferdError, InvalidInput
from inferd.core.types import DTYPES, InferenceRequest, InferenceResponse
from inferd.dialects.abeja.exceptions import InvalidInput as AbejaInvalidInput
from inferd.dialects.abeja.request import parse_multipart
from inferd.protocols.forms import UploadLimits
from inferd.protocols.seldon import payload
from inferd.protocols.seldon.errors import SeldonError
from inferd.protocols.v2 import codecs
from inferd.protocols.v2.http_codec import decode_request, encode_response

NUMERIC = sorted(name for name in DTYPES if name not in ("BYTES", "FP16"))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def arrays(draw: st.DrawFn) -> np.ndarray:
    datatype = draw(st.sampled_from(NUMERIC))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4))
    elements = None
    if datatype.startswith("FP"):
        elements = st.floats(allow_nan=False, allow_infinity=False, width=32 if datatype == "FP32" else 64)
    return draw(hnp.arrays(DTYPES[datatype], shape, elements=elements))


@given(arrays(), st.booleans())
def test_v2_responses_decode_back_to_their_arrays(array: np.ndarray, binary: bool) -> None:
    """An encoded response, read back as a request (same layout), gives the same array."""
    request = InferenceRequest({}, {"binary_data_output": binary})
    body, header_length = encode_response(InferenceResponse({"x": array}, model_name="m"), request)
    document = orjson.loads(body[:header_length] if header_length else body)
    document["inputs"] = document.pop("outputs")
    del document["model_name"]
    header = orjson.dumps(document)
    again = decode_request(
        header + body[len(body) if header_length is None else header_length :],
        str(len(header)) if header_length else None,
    )
    decoded = again.inputs["x"]
    assert decoded.dtype == array.dtype and decoded.shape == array.shape
    assert np.array_equal(decoded, array)


@given(st.binary(max_size=300), st.one_of(st.none(), st.integers(-5, 400).map(str), st.text(max_size=4)))
def test_v2_random_bodies_are_refused_with_invalid_input(body: bytes, header_length: str | None) -> None:
    try:
        decode_request(body, header_length)
    except InvalidInput:
        pass


@st.composite
def v2_documents(draw: st.DrawFn) -> tuple[bytes, str | None]:
    """Near-valid V2 bodies: real keys with random values, and random binary tails."""
    tensor = {
        "name": draw(st.text(max_size=4) | json_values),
        "shape": draw(st.lists(st.integers(-2, 5), max_size=3) | json_values),
        "datatype": draw(st.sampled_from([*DTYPES, "NOPE"]) | json_values),
        "data": draw(json_values),
    }
    if draw(st.booleans()):
        tensor["parameters"] = {"binary_data_size": draw(st.integers(-3, 40) | json_values)}
    document = {"inputs": draw(st.lists(st.just(tensor), max_size=2) | json_values)}
    if draw(st.booleans()):
        document["outputs"] = draw(json_values)
    header = orjson.dumps(document)
    tail = draw(st.binary(max_size=40))
    return header + tail, str(len(header)) if tail or draw(st.booleans()) else None


@given(v2_documents())
def test_v2_near_valid_bodies_decode_or_are_refused(case: tuple[bytes, str | None]) -> None:
    body, header_length = case
    try:
        decode_request(body, header_length)
    except InvalidInput:
        pass


@given(st.sampled_from(sorted(DTYPES)), st.lists(st.integers(0, 4), max_size=3), st.binary(max_size=64))
def test_v2_raw_tensors_decode_or_are_refused(datatype: str, shape: list[int], raw: bytes) -> None:
    try:
        array = codecs.decode_raw("x", datatype, shape, raw)
    except InvalidInput:
        return
    assert list(array.shape) == shape


@given(json_values)
def test_seldon_messages_decode_or_are_bad_data(message: Any) -> None:
    for candidate in (
        message,
        {"data": message},
        {"data": {"ndarray": message}},
        {"binData": message},
        {"data": {"tensor": message}},
        {"data": {"tensor": {"shape": message, "values": message}}},
        {"meta": message, "strData": "x"},
    ):
        try:
            payload.decode(candidate)
        except (SeldonError, InvalidInput):
            pass


@given(arrays())
def test_seldon_encoded_answers_decode_back(array: np.ndarray) -> None:
    for kind in ("ndarray", "tensor"):
        message = orjson.loads(
            orjson.dumps(payload.encode(array, kind, None), option=orjson.OPT_SERIALIZE_NUMPY)
        )
        decoded = payload.decode(message)
        assert np.allclose(np.asarray(decoded.features, dtype=float), array.astype(float))


BOUNDARY = b"fuzzboundary"


@st.composite
def multipart_bodies(draw: st.DrawFn) -> bytes:
    """Well-formed parts with random headers and data, then random damage."""
    parts = []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.text(max_size=6)).encode("utf-8", "replace")
        file_name = draw(st.text(max_size=12)).encode("utf-8", "replace")
        data = draw(st.binary(max_size=30))
        parts.append(
            b"--"
            + BOUNDARY
            + b'\r\nContent-Disposition: form-data; name="'
            + name
            + b'"; filename="'
            + file_name
            + b'"\r\nContent-Type: application/octet-stream\r\n\r\n'
            + data
            + b"\r\n"
        )
    body = b"".join(parts) + b"--" + BOUNDARY + b"--\r\n"
    if draw(st.booleans()):
        at = draw(st.integers(0, len(body)))
        body = body[:at] + draw(st.binary(max_size=20)) + body[at + draw(st.integers(0, 10)) :]
    return body


@given(multipart_bodies())
def test_abeja_multipart_parses_or_is_refused(body: bytes) -> None:
    limits = UploadLimits(max_files=2, max_size=20)
    try:
        parts = parse_multipart(body, "multipart/form-data; boundary=fuzzboundary", limits)
    except (AbejaInvalidInput, InferdError):
        return
    assert len(parts) <= 2
    for part in parts:
        assert len(part.read()) <= 20
        name = part["file_name"]
        assert name is None or ("/" not in name and "\\" not in name and "\x00" not in name and name != "..")


PASSED_DTYPES = ["float16", "float32", "float64", "int8", "int32", "int64", "uint8", "uint32", "uint64"]
PASSED_DTYPES += ["bool", "complex64", "datetime64[s]", "U3"]


@given(
    result=st.sampled_from(PASSED_DTYPES).flatmap(
        lambda dtype: hnp.arrays(np.dtype(dtype), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0))
    ),
    request_kind=st.sampled_from(["ndarray", "tensor", "tftensor", "jsonData", "strData"]),
    class_names=st.sampled_from([None, ["a", "b", "c", "d", "e"]]),
)
def test_a_result_passed_on_in_a_graph_is_what_the_next_node_would_decode(
    result: np.ndarray, request_kind: str, class_names: list[str] | None
) -> None:
    """Between two local nodes a graph skips the message: what it hands on must be what `decode` of
    `encode`'s message gives (the same values, dtype, shape, names and kind), and the message made of
    it at the end must be `encode`'s, for every result it takes; the others take the long way."""
    meta = {"puid": "p", "requestPath": {"a": "A"}}
    passed = payload.passed_on(result, request_kind, class_names, meta)
    if result.dtype.kind not in "fiubc" or result.ndim == 0 or result.size == 0 or request_kind == "tftensor":
        assert passed is None
        return
    if result.dtype == np.uint64:
        assert passed is None
        return
    assert passed is not None
    message = {**payload.encode(result, request_kind, class_names), "meta": meta}
    decoded = payload.decode(message)  # in-process, as the graph passed messages between its nodes
    assert (passed.kind, passed.names, passed.meta) == (decoded.kind, decoded.names, decoded.meta)
    assert passed.features.dtype == decoded.features.dtype
    assert passed.features.shape == decoded.features.shape
    assert np.array_equal(passed.features, decoded.features, equal_nan=result.dtype.kind in "fc")
    assert passed.features is not result and not np.shares_memory(passed.features, result)
    assert repr(payload.as_message(passed)) == repr(message)  # repr: NaN equals itself there
