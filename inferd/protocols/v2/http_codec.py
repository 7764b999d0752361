"""V2 REST bodies ↔ core requests and responses, including the binary tensor data extension.

With an ``Inference-Header-Content-Length`` header the body is a JSON header followed by the raw
blobs of the inputs that carry ``binary_data_size``, in input order; responses do the same for
outputs chosen binary by ``binary_data`` / ``binary_data_output``.
"""

from __future__ import annotations

from typing import Any

from inferd.core.errors import InvalidInput
from inferd.core.types import InferenceRequest, InferenceResponse, datatype_of
from inferd.protocols.asgi import Body
from inferd.protocols.json import dumps
from inferd.protocols.v2 import codecs
from inferd.protocols.v2.schema import parse_infer_body

BINARY_SIZE = "binary_data_size"


def decode_request(body: bytes | memoryview, header_length: str | None) -> InferenceRequest:
    """A request from its body: binary tensors are numpy views over ``body`` (no copy)."""
    header, blobs = _split_body(body, header_length)
    parsed = parse_infer_body(header)
    inputs, input_parameters = {}, {}
    offset = 0
    for tensor in parsed["inputs"]:
        name = tensor["name"]
        if name in inputs:
            raise InvalidInput(f"input '{name}' appears twice")
        parameters = tensor.get("parameters") or {}
        size = parameters.get(BINARY_SIZE)
        if size is None:
            inputs[name] = _decode_json_input(tensor)
        else:
            inputs[name] = _decode_binary_input(tensor, size, blobs[offset:])
            offset += int(size)
        input_parameters[name] = parameters
    if offset != len(blobs):
        raise InvalidInput(f"the body carries {len(blobs) - offset} bytes of binary data no input claims")
    outputs = None
    if parsed.get("outputs") is not None:
        outputs = [
            codecs.requested_output(out["name"], out.get("parameters") or {}) for out in parsed["outputs"]
        ]
    return InferenceRequest(
        inputs, parsed.get("parameters") or {}, parsed.get("id"), outputs, input_parameters
    )


def _split_body(body: bytes | memoryview, header_length: str | None) -> tuple[bytes | memoryview, memoryview]:
    """The JSON header and the binary data after it, both without a copy of ``body``."""
    if header_length is None:
        return body, memoryview(b"")
    try:
        length = int(header_length)
    except ValueError:
        raise InvalidInput(
            f"Inference-Header-Content-Length must be an integer, got '{header_length}'"
        ) from None
    if not 0 <= length <= len(body):
        raise InvalidInput(
            f"Inference-Header-Content-Length {length} does not fit a body of {len(body)} bytes"
        )
    view = memoryview(body)
    return view[:length], view[length:]


def _decode_json_input(tensor: dict[str, Any]) -> Any:
    name, data = tensor["name"], tensor.get("data")
    if data is None:
        raise InvalidInput(f"input '{name}' has neither data nor binary_data_size")
    return codecs.decode_json(name, tensor["datatype"], tensor["shape"], data)


def _decode_binary_input(tensor: dict[str, Any], size: object, blobs: memoryview) -> Any:
    name = tensor["name"]
    if tensor.get("data") is not None:
        raise InvalidInput(f"input '{name}' has both data and binary_data_size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise InvalidInput(f"input '{name}': binary_data_size must be a non-negative integer")
    if size > len(blobs):
        raise InvalidInput(
            f"input '{name}' declares {size} bytes of binary data but only {len(blobs)} remain"
        )
    return codecs.decode_raw(name, tensor["datatype"], tensor["shape"], blobs[:size])


def encode_response(response: InferenceResponse, request: InferenceRequest) -> tuple[bytes, int | None]:
    """The response body in one piece and, when any output is binary, the length of its JSON header."""
    parts, header_length = encode_response_parts(response, request)
    return parts if isinstance(parts, bytes) else b"".join(parts), header_length


def encode_response_parts(response: InferenceResponse, request: InferenceRequest) -> tuple[Body, int | None]:
    """The response body and, when any output is binary, the length of its JSON header. Binary
    outputs are parts of their own: the arrays' memory where it already is the raw layout, sent as
    it is (`inferd.protocols.asgi.send_response`), so no copy of the tensor is made on the way out."""
    binary_default = bool(request.parameters.get("binary_data_output", False))
    wanted = {output.name: output.parameters for output in request.outputs or ()}
    outputs, blobs = [], []
    for name, array in response.outputs.items():
        entry: dict[str, Any] = {"name": name, "datatype": datatype_of(array), "shape": list(array.shape)}
        binary = bool(wanted.get(name, {}).get("binary_data", binary_default))
        data = None if binary else codecs.encode_json(array)
        if data is None:
            raw = codecs.raw_view(array)
            entry["parameters"] = {BINARY_SIZE: len(raw)}
            blobs.append(raw)
        else:
            entry["data"] = data
        outputs.append(entry)
    header = dumps(_envelope(response, outputs))
    if not blobs:
        return header, None
    return (header, *blobs), len(header)


def _envelope(response: InferenceResponse, outputs: list[dict[str, Any]]) -> dict[str, Any]:
    body: dict[str, Any] = {"model_name": response.model_name}
    if response.model_version is not None:
        body["model_version"] = response.model_version
    if response.id is not None:
        body["id"] = response.id
    body["parameters"] = response.parameters
    body["outputs"] = outputs
    return body
