"""How processes are run: one process (local), a supervisor of worker processes, Ray Serve later."""
