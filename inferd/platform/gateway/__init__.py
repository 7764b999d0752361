"""The data path of endpoints: an embedded asyncio gateway forwarding each request of an endpoint to
one of its services, picked by weight, with an optional shadow copy.

- `EndpointTable` (`table`): endpoint name → weighted upstreams and shadow, swapped atomically;
  in-flight counts per upstream and `EndpointTable.drained` for switching without failed requests.
- `Gateway` (`proxy`): the raw ASGI app that forwards, streaming both ways.
- `Pool` (`inferd.engines.upstream`, which the Ray engine's forwarder shares): keep-alive HTTP/1.1
  connections to one upstream, parsed by httptools.
- `serve_gateway` (`server`): the gateway on uvicorn in the caller's event loop.
- `serve_grpc_gateway` (`grpc_proxy`): the gRPC side, relaying HTTP/2 streams (`grpc_relay`) over
  inferd's own HTTP/2 framing (`inferd.protocols.h2`) to the services' gRPC ports.
"""

from inferd.platform.gateway.proxy import Gateway
from inferd.platform.gateway.server import GatewayServer, Limits, serve_gateway
from inferd.platform.gateway.table import EndpointTable, Shadow, Split, Target

__all__ = [
    "EndpointTable",
    "Gateway",
    "GatewayServer",
    "Limits",
    "Shadow",
    "Split",
    "Target",
    "serve_gateway",
]
