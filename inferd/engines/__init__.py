"""How server processes are run: one process (`local`), a supervisor of worker processes sharing
its ports (`supervisor`), each optionally with its models in a model process of its own
(`isolation`, `model_process`), or Ray Serve replicas (`ray`, `ray_nodes`). The child processes are
watched and stopped by `inferd.core.keeper`. `connections` and `open_files` bound what connections
may cost, and `sockets` binds each port once for every worker."""
