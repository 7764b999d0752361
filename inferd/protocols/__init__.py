"""Wire formats: V2, shared by every model, and a platform's own where more than one dialect speaks it
(Seldon's, for its components and its inference graphs). Protocols only translate: they decode, call
the data plane, encode."""
