"""Python modules generated from ``../proto/grpc_predict_v2.proto`` by ``scripts/generate_protos.sh``.

Do not edit them by hand; change the .proto and regenerate.
"""
