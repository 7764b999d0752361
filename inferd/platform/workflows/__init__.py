"""The platform's workflows: what ``inferd deploy``, ``get``, ``logs``, ``delete`` and ``apply`` do,
as clients of the control API (`Control`), one plain HTTP call per step. A workflow reads a project
file (a ``cortex.yaml``, a SeldonDeployment, a KServe InferenceService) into a `Layout` (which
services an endpoint routes to, by weight), and `roll_out` makes the platform match it: a version per
new content, a service per new version, ready before the endpoint switches, the services that lost
their traffic stopped after the switch drained them."""

from __future__ import annotations

from inferd.platform.workflows.control import Control, ControlError
from inferd.platform.workflows.layout import Layout, Part, Previous, WorkflowError
from inferd.platform.workflows.rollout import Outcome, roll_out

__all__ = ["Control", "ControlError", "Layout", "Outcome", "Part", "Previous", "WorkflowError", "roll_out"]
