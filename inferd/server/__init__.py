"""Assembles one process's servers: the ASGI app, the gRPC server, metrics and logging."""
