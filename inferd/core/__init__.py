"""The protocol-free runtime: types, models, registry, data plane, errors, settings and metrics,
and what runs beside it: batching, admission limits, training jobs and the process keeper that
workers, model processes and jobs share. Nothing here speaks a wire protocol."""
