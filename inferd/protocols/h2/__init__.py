"""inferd's own HTTP/2 (`frames`: the frame rules of RFC 9113; `connection`: reading a connection;
`sending`: its streams' queues and windows; `server`: a server's connections; `flood`: the budget of
frames that cost work for nothing; `hpack_out`) and gRPC's layer over it (`grpc_wire`): shared by the
platform gateway's gRPC relay and the native gRPC server, so both sit on one framing."""
