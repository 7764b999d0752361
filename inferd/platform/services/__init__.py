"""Services on this machine: each one a version's folder served by `inferd serve` processes on a
loopback port, supervised by `LocalRunner` (restarted on crash with back-off, stopped with a drain,
re-adopted after the control process restarts), its output in a rotated log file."""

from inferd.platform.services.local import LocalRunner
from inferd.platform.services.spec import RestartPolicy, ServiceSpec, StateChange

__all__ = ["LocalRunner", "RestartPolicy", "ServiceSpec", "StateChange"]
