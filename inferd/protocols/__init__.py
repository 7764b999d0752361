"""Wire formats: V2, shared by every model, and a platform's own where more than one dialect speaks it
(Seldon's, for its components and its inference graphs); and what every REST route shares: the
status table, JSON, forms, compressed bodies, control and fallback routes, bare ASGI endpoints and
the Prometheus exposition. Protocols only translate: they decode, call the data plane, encode."""
