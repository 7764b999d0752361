"""The protocol-free runtime: types, models, registry, data plane, errors, settings and metrics,
and what runs beside it: batching, admission limits, training jobs and the process keeper that
workers, model processes and jobs share; and the one `project.Project` that ``serve``, ``build``,
``export`` and ``init`` start from. Nothing here speaks a wire protocol."""
