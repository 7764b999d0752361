"""Assembles one process's servers: the ASGI app (its routing, middleware, authentication, origin
checks and try-it page), the gRPC server, metrics and logging."""
