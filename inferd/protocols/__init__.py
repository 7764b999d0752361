"""Wire formats shared by every model. Protocols only translate: they decode, call the data plane, encode."""
