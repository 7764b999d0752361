#!/bin/sh
# Regenerate inferd/protocols/v2/_generated/ from inferd/protocols/v2/proto/grpc_predict_v2.proto.
#
#   sh scripts/generate_protos.sh            (or: make protos)
#
# grpcio-tools is pinned, not taken from the environment: the generated code demands at runtime a
# protobuf at least as new as the protoc that wrote it and a grpcio at least as new as the plugin.
# grpcio-tools 1.66.0 bundles protoc 27.2, so the output needs protobuf >= 5.27.2 and grpcio >= 1.66.0,
# inside inferd's own floors (protobuf>=5.29, grpcio>=1.66). The pinned copy is installed once
# into build/ (git-ignored), beside whatever grpcio-tools the virtualenv has.
#
# Two edits follow protoc:
#  * the _pb2_grpc module imports its _pb2 sibling by absolute package path;
#  * the _pb2 module builds its descriptors in a private pool instead of protobuf's default pool. The
#    service is package `inference`, like Triton's own grpc_service.proto (tritonclient.grpc) and
#    KServe's grpc_predict_v2.proto; in the default pool importing any of those next to inferd fails
#    with "duplicate symbol 'inference.ServerLiveRequest'".
set -eu

cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
GRPCIO_TOOLS_VERSION=1.66.0
TOOLS="build/grpcio-tools-$GRPCIO_TOOLS_VERSION"
PROTO_DIR=inferd/protocols/v2/proto
OUT=inferd/protocols/v2/_generated

if [ ! -d "$TOOLS/grpc_tools" ]; then
    "$PYTHON" -m pip install --quiet --no-deps --target "$TOOLS" "grpcio-tools==$GRPCIO_TOOLS_VERSION"
fi

PYTHONPATH="$TOOLS" "$PYTHON" -m grpc_tools.protoc \
    --proto_path="$PROTO_DIR" \
    --python_out="$OUT" \
    --pyi_out="$OUT" \
    --grpc_python_out="$OUT" \
    "$PROTO_DIR/grpc_predict_v2.proto"

"$PYTHON" - "$OUT" <<'PY'
import pathlib
import sys

out = pathlib.Path(sys.argv[1])


def patch(name: str, old: str, new: str) -> None:
    path = out / name
    text = path.read_text()
    if text.count(old) != 1:
        sys.exit(f"generate_protos.sh: expected exactly one {old!r} in {path}")
    path.write_text(text.replace(old, new))


patch(
    "grpc_predict_v2_pb2_grpc.py",
    "import grpc_predict_v2_pb2 as",
    "from inferd.protocols.v2._generated import grpc_predict_v2_pb2 as",
)
patch(
    "grpc_predict_v2_pb2.py",
    "DESCRIPTOR = _descriptor_pool.Default().AddSerializedFile(",
    "_POOL = _descriptor_pool.DescriptorPool()  # private: see scripts/generate_protos.sh\n"
    "DESCRIPTOR = _POOL.AddSerializedFile(",
)
PY
echo "generated $OUT with grpcio-tools $GRPCIO_TOOLS_VERSION"
