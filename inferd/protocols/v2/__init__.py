"""The V2 Open Inference Protocol (KServe / Triton / MLServer), REST and gRPC."""
