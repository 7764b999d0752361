"""Runs (a version over input files into an output folder, in a process of its own) and triggers (a
run for each new file under a folder or storage prefix) of the control process."""

from inferd.platform.runs.manager import Runs

__all__ = ["Runs"]
