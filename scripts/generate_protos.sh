#!/bin/sh
# Regenerate the gRPC code inferd serves from the .proto files kept in the repository:
#   inferd/protocols/v2/proto/        → inferd/protocols/v2/_generated/        (V2, package `inference`)
#   inferd/protocols/seldon/proto/    → inferd/protocols/seldon/_generated/    (Seldon, `seldon.protos`)
#
#   sh scripts/generate_protos.sh            (or: make protos)
#
# grpcio-tools is pinned, not taken from the environment: the generated code demands at runtime a
# protobuf at least as new as the protoc that wrote it and a grpcio at least as new as the plugin.
# grpcio-tools 1.66.0 bundles protoc 27.2, so the output needs protobuf >= 5.27.2 and grpcio >= 1.66.0,
# inside inferd's own floors (protobuf>=5.29, grpcio>=1.66). The pinned copy is installed once
# into build/ (git-ignored), beside whatever grpcio-tools the virtualenv has.
#
# Edits follow protoc:
#  * generated modules import their siblings by absolute package path;
#  * descriptors are built in a private pool instead of protobuf's default pool (one pool per
#    protocol, shared by its files). Each protocol's package is also defined by a peer that users may
#    import next to inferd: Triton's and KServe's `inference`, seldon-core's `seldon.protos`,
#    TensorFlow's `tensorflow.TensorProto`; in the default pool that fails with "duplicate symbol".
#    Well-known types a file imports are added to the private pool first.
set -eu

cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
GRPCIO_TOOLS_VERSION=1.66.0
TOOLS="build/grpcio-tools-$GRPCIO_TOOLS_VERSION"

if [ ! -d "$TOOLS/grpc_tools" ]; then
    "$PYTHON" -m pip install --quiet --no-deps --target "$TOOLS" "grpcio-tools==$GRPCIO_TOOLS_VERSION"
fi

# generate PROTO_DIR OUT_DIR FILE... : the first FILE creates the private pool, the others join it.
generate() {
    proto_dir=$1
    out=$2
    shift 2
    PYTHONPATH="$TOOLS" "$PYTHON" -m grpc_tools.protoc \
        --proto_path="$proto_dir" \
        --proto_path="$TOOLS/grpc_tools/_proto" \
        --python_out="$out" \
        --pyi_out="$out" \
        --grpc_python_out="$out" \
        "$@"
    "$PYTHON" - "$out" "$@" <<'PY'
import pathlib
import re
import sys

out = pathlib.Path(sys.argv[1])
stems = [pathlib.Path(name).stem for name in sys.argv[2:]]
package = ".".join(out.parts)
WELL_KNOWN = re.compile(r"^from google\.protobuf import (\w+_pb2) as (\w+)$", re.MULTILINE)
POOL_LINE = "DESCRIPTOR = _descriptor_pool.Default().AddSerializedFile("


def patch(path: pathlib.Path, old: str, new: str) -> None:
    text = path.read_text()
    if text.count(old) != 1:
        sys.exit(f"generate_protos.sh: expected exactly one {old!r} in {path}")
    path.write_text(text.replace(old, new))


for index, stem in enumerate(stems):
    for sibling in stems:
        for name in (f"{stem}_pb2.py", f"{stem}_pb2_grpc.py"):
            path = out / name
            if path.exists() and f"\nimport {sibling}_pb2 as" in path.read_text():
                patch(path, f"\nimport {sibling}_pb2 as", f"\nfrom {package} import {sibling}_pb2 as")
    module = out / f"{stem}_pb2.py"
    text = module.read_text()
    if index == 0:
        pool = "_POOL = _descriptor_pool.DescriptorPool()  # private: see scripts/generate_protos.sh\n"
    else:
        first = f"{stems[0]}_pb2"
        pool = f"from {package} import {first} as _first\n_POOL = _first._POOL  # one private pool per protocol\n"
    for _, alias in WELL_KNOWN.findall(text):
        pool += (
            f"try:\n    _POOL.FindFileByName({alias}.DESCRIPTOR.name)\n"
            f"except KeyError:\n    _POOL.AddSerializedFile({alias}.DESCRIPTOR.serialized_pb)\n"
        )
    patch(module, POOL_LINE, pool + "DESCRIPTOR = _POOL.AddSerializedFile(")
PY
}

generate inferd/protocols/v2/proto inferd/protocols/v2/_generated grpc_predict_v2.proto
generate inferd/protocols/seldon/proto inferd/protocols/seldon/_generated tensorflow_tensor.proto prediction.proto
echo "generated with grpcio-tools $GRPCIO_TOOLS_VERSION"
