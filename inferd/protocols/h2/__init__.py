"""inferd's own HTTP/2 (`connection`, `hpack_out`) and gRPC's layer over it (`grpc_wire`): shared by the
platform gateway's gRPC relay and the native gRPC server, so both sit on one framing."""
