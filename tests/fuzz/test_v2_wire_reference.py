"""`inferd.protocols.v2.grpc_wire.parse_request` (inferd's walk over a ``ModelInferRequest``'s
top-level fields) against protobuf's own parser, on the same bytes.

Valid requests are generated, serialized by protobuf, re-encoded in ways the wire format allows
(fields in any order, a field repeated, unknown fields of every wire type, unpacked shapes, overlong
varints), then mutated (truncated, bytes flipped, inserted, deleted). For each:

- protobuf refuses ⇒ ours refuses with protobuf's DecodeError, which the servers' tolerant
  deserializer (`inferd.server.grpc_requests`) turns into INVALID_ARGUMENT; nothing else escapes;
- protobuf accepts ⇒ ours gives the same message (every field, unknown fields too) and the same
  ``raw_input_contents``, or refuses for one of `REASONS`.

And the other way: what inferd writes by hand (`inferd.core.varint`, a response's raw outputs
around their own memory) reads back in protobuf as the message meant.
"""

from __future__ import annotations

from collections.abc import Callable

from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

from inferd.core.varint import varint as core_varint
from inferd.protocols.v2 import grpc_wire
from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as pb
from inferd.server.grpc_requests import MalformedRequest, tolerant
from tests.fuzz.conftest import EXAMPLES

#: Requests protobuf accepts and inferd refuses on purpose: none. The walk hands every field but
#: ``raw_input_contents`` to protobuf, and whatever it cannot walk to protobuf whole.
REASONS: tuple[str, ...] = ()
#: Each example takes well under a millisecond: five times the profile's (about a second a test).
MANY = settings(max_examples=EXAMPLES * 5)

Field = tuple[int, int, bytes]  # field number, wire type, encoded value (after the key)


def varint(value: int, extra: int = 0) -> bytes:
    """``value`` as a varint, padded with ``extra`` redundant bytes (an overlong encoding)."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        if value or extra:
            out.append(byte | 0x80)
            if not value:
                extra -= 1
        else:
            out.append(byte)
            return bytes(out)


def key(number: int, kind: int, extra: int = 0) -> bytes:
    return varint(number << 3 | kind, extra)


def encode(fields: list[Field], overlong: Callable[[], int] = lambda: 0) -> bytes:
    out = bytearray()
    for number, kind, value in fields:
        out += key(number, kind, overlong())
        if kind == 2:
            out += varint(len(value), overlong())
        out += value
    return bytes(out)


def top_level(message: pb.ModelInferRequest) -> list[Field]:
    """The top-level fields of ``message`` as protobuf writes them, one entry per occurrence."""
    fields: list[Field] = []
    for name, number in (("model_name", 1), ("model_version", 2), ("id", 3)):
        if getattr(message, name):
            fields.append((number, 2, getattr(message, name).encode()))
    for name_, value in message.parameters.items():
        entry = pb.ModelInferRequest.ParametersEntry(key=name_)
        entry.value.CopyFrom(value)
        fields.append((4, 2, entry.SerializeToString()))
    for tensor in message.inputs:
        fields.append((5, 2, tensor_bytes(tensor)))
    for output in message.outputs:
        fields.append((6, 2, output.SerializeToString()))
    for blob in message.raw_input_contents:
        fields.append((7, 2, blob))
    return fields


def tensor_bytes(tensor: pb.ModelInferRequest.InferInputTensor) -> bytes:
    """An input tensor with its shape unpacked (one varint field each) when it has one: proto3
    parsers take both encodings of a repeated scalar."""
    if not tensor.shape or sum(tensor.shape) % 2:  # some packed, some unpacked
        return tensor.SerializeToString()
    copy = pb.ModelInferRequest.InferInputTensor()
    copy.CopyFrom(tensor)
    del copy.shape[:]
    return copy.SerializeToString() + b"".join(key(3, 0) + varint(n % 2**64) for n in tensor.shape)


# ---- generated requests ----

text = st.text(max_size=12)
int64 = st.integers(-(2**63), 2**63 - 1)
parameter = st.one_of(
    st.builds(pb.InferParameter, bool_param=st.booleans()),
    st.builds(pb.InferParameter, int64_param=int64),
    st.builds(pb.InferParameter, string_param=text),
    st.builds(pb.InferParameter, double_param=st.floats()),
    st.builds(pb.InferParameter, uint64_param=st.integers(0, 2**64 - 1)),
)
parameters = st.dictionaries(text, parameter, max_size=3)
contents = st.one_of(
    st.builds(pb.InferTensorContents),
    st.builds(pb.InferTensorContents, int_contents=st.lists(st.integers(-(2**31), 2**31 - 1), max_size=4)),
    st.builds(pb.InferTensorContents, fp32_contents=st.lists(st.floats(width=32), max_size=4)),
    st.builds(pb.InferTensorContents, bytes_contents=st.lists(st.binary(max_size=8), max_size=3)),
    st.builds(pb.InferTensorContents, uint64_contents=st.lists(st.integers(0, 2**64 - 1), max_size=3)),
)


@st.composite
def input_tensor(draw: st.DrawFn) -> pb.ModelInferRequest.InferInputTensor:
    tensor = pb.ModelInferRequest.InferInputTensor(
        name=draw(text),
        datatype=draw(st.sampled_from(["FP32", "INT32", "BYTES", "UINT64", "BOOL", ""])),
        shape=draw(st.lists(int64, max_size=4)),
    )
    for name, value in draw(parameters).items():
        tensor.parameters[name].CopyFrom(value)
    if draw(st.booleans()):
        tensor.contents.CopyFrom(draw(contents))
    return tensor


@st.composite
def requests(draw: st.DrawFn) -> pb.ModelInferRequest:
    message = pb.ModelInferRequest(
        model_name=draw(text),
        model_version=draw(text),
        id=draw(text),
        inputs=draw(st.lists(input_tensor(), max_size=3)),
        raw_input_contents=draw(st.lists(st.binary(max_size=40), max_size=4)),
    )
    for name, value in draw(parameters).items():
        message.parameters[name].CopyFrom(value)
    for name in draw(st.lists(text, max_size=2)):
        output = message.outputs.add(name=name)
        for key_, value in draw(parameters).items():
            output.parameters[key_].CopyFrom(value)
    return message


unknown_field = st.one_of(
    st.tuples(st.integers(8, 2**29 - 1), st.just(0), st.integers(0, 2**64 - 1).map(varint)),
    st.tuples(st.integers(8, 2**29 - 1), st.just(1), st.binary(min_size=8, max_size=8)),
    st.tuples(st.integers(8, 2**29 - 1), st.just(2), st.binary(max_size=10)),
    st.tuples(st.integers(8, 2**29 - 1), st.just(5), st.binary(min_size=4, max_size=4)),
    # a group: its start, a varint field inside, its end
    st.integers(8, 2**20).map(lambda n: (n, 3, key(1, 0) + b"\x01" + key(n, 4))),
    # field 7 with a wire type other than its own: an unknown field to protobuf
    st.tuples(st.just(7), st.just(0), st.integers(0, 2**64 - 1).map(varint)),
)


@st.composite
def encodings(draw: st.DrawFn) -> tuple[pb.ModelInferRequest, bytes]:
    """A request and one of its encodings, valid or not."""
    message = draw(requests())
    fields = top_level(message)
    if draw(st.booleans()):
        fields = draw(st.permutations(fields))  # any order is the same message
    for _ in range(draw(st.integers(0, 2))):
        if fields:  # a field repeated: a repeated field gets one more value, a string the last
            fields.insert(draw(st.integers(0, len(fields))), draw(st.sampled_from(fields)))
    for unknown in draw(st.lists(unknown_field, max_size=2)):
        fields.insert(draw(st.integers(0, len(fields))), unknown)
    # redundant bytes for each key and length: up to 10-byte varints
    pads = draw(
        st.lists(st.sampled_from([0, 1, 4, 5, 9]), min_size=2 * len(fields), max_size=2 * len(fields))
    )
    wire = encode(fields, iter(pads).__next__)
    return message, wire


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    _, wire = draw(encodings())
    data = bytearray(wire)
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "overlong"]))
        if action == "truncate":
            del data[where:]
        elif action == "flip" and where < len(data):
            data[where] ^= draw(st.integers(1, 255))
        elif action == "insert":
            data[where:where] = draw(st.binary(min_size=1, max_size=6))
        elif action == "delete":
            del data[where : where + draw(st.integers(1, 4))]
        elif action == "overlong":  # a continuation byte: the varint there (if any) runs on
            data[where:where] = b"\x80"
    return bytes(data)


# ---- the comparison ----


def reference(wire: bytes) -> pb.ModelInferRequest | None:
    try:
        return pb.ModelInferRequest.FromString(wire)
    except DecodeError:
        return None


def ours(wire: bytes) -> grpc_wire.InferCall | DecodeError:
    try:
        return grpc_wire.parse_request(wire)
    except DecodeError as exc:  # anything else escapes and fails the test
        return exc


def assert_same(wire: bytes) -> None:
    expected, got = reference(wire), ours(wire)
    if expected is None:
        assert isinstance(got, DecodeError), f"protobuf refuses {wire.hex()}, inferd accepts it"
        refused = tolerant(grpc_wire.parse_request)(wire)
        assert isinstance(refused, MalformedRequest)
        assert refused.message.startswith("malformed request: ")
        return
    assert not isinstance(got, DecodeError), f"protobuf accepts {wire.hex()}, inferd refuses it: {got}"
    assert [bytes(blob) for blob in got.raw] == list(expected.raw_input_contents)
    rest = pb.ModelInferRequest()
    rest.CopyFrom(expected)
    del rest.raw_input_contents[:]
    kept = pb.ModelInferRequest()
    kept.CopyFrom(got.message)
    del kept.raw_input_contents[:]  # filled only where protobuf parsed the request whole
    # byte for byte, unknown fields included (and NaN parameters compared by their bits)
    assert kept.SerializeToString(deterministic=True) == rest.SerializeToString(deterministic=True)
    assert got.model_name == expected.model_name and got.id == expected.id
    assert got.SerializeToString() == wire


@given(requests())
@MANY
def test_protobufs_own_serialization_parses_the_same(message: pb.ModelInferRequest) -> None:
    wire = message.SerializeToString()
    assert_same(wire)
    call = grpc_wire.parse_request(wire)
    assert call.message.model_name == message.model_name
    assert list(call.message.inputs) == list(message.inputs)


@given(encodings())
@MANY
def test_every_encoding_the_wire_format_allows_parses_the_same(
    case: tuple[pb.ModelInferRequest, bytes],
) -> None:
    _, wire = case
    assert_same(wire)


@given(mutated())
@MANY
def test_mutated_bytes_are_refused_when_protobuf_refuses_them(wire: bytes) -> None:
    assert_same(wire)


# Cases found by the properties above, kept as plain examples: a key longer than protobuf reads
# (5 bytes: field numbers fit in 32 bits) must be refused as protobuf refuses it.
KNOWN = {
    "field 7's key as 6 bytes": bytes.fromhex("ba8080808000") + b"\x02hi",
    "field 7's key as 10 bytes": bytes.fromhex("ba808080808080808000") + b"\x02hi",
    "field 1's key as 6 bytes, then field 7": bytes.fromhex("8a8080808000") + b"\x01m" + b"\x3a\x01x",
    "field 7's key as 5 bytes (accepted by both)": bytes.fromhex("ba80808000") + b"\x02hi",
    "field 7's length as 10 bytes (accepted by both)": b"\x3a" + varint(2, 9) + b"hi",
    "a group around field 7": b"\x0b\x3a\x01x\x0c" + b"\x3a\x01y",
    "an end-group key alone": b"\x0c",
}


def test_known_cases() -> None:
    for name, wire in KNOWN.items():
        try:
            assert_same(wire)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None


# ---- what inferd writes: protobuf must read it back ----


@given(st.integers(0, 2**64 - 1))
@MANY
def test_inferds_varints_read_back_in_protobuf(value: int) -> None:
    wire = key(5, 0) + core_varint(value)  # InferParameter.uint64_param
    assert pb.InferParameter.FromString(wire).uint64_param == value
    assert grpc_wire.varint(value) == core_varint(value)


@given(requests(), st.lists(st.binary(max_size=300), max_size=4))
@MANY
def test_responses_written_around_their_raw_outputs_read_back_in_protobuf(
    request: pb.ModelInferRequest, raw: list[bytes]
) -> None:
    message = pb.ModelInferResponse(model_name=request.model_name, id=request.id)
    for name, value in request.parameters.items():
        message.parameters[name].CopyFrom(value)
    for tensor in request.inputs:
        message.outputs.add(name=tensor.name, datatype=tensor.datatype, shape=tensor.shape)
    wire = grpc_wire.InferAnswer(message, [memoryview(blob) for blob in raw]).SerializeToString()
    expected = pb.ModelInferResponse()
    expected.CopyFrom(message)
    expected.raw_output_contents.extend(raw)
    read = pb.ModelInferResponse.FromString(wire)  # compared as bytes: a NaN parameter is not == itself
    assert read.SerializeToString(deterministic=True) == expected.SerializeToString(deterministic=True)
