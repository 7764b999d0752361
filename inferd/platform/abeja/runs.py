"""ABEJA's runs and triggers (``abeja model submit-run``, ``describe-runs``, ``describe-run-logs``,
``create-trigger``, ``describe-triggers``, ``delete-trigger``) over the platform's `Runs`.

ABEJA reads and writes its DataLake: a run's input is ``{"$datalake:1": "CHANNEL/FILE"}``, its output
``{"$datalake:1": "CHANNEL"}``; a trigger watches ``input_service_name: datalake`` with a channel id.
Here a `Datalake` folder stands for it: channel ``C`` is the folder ``ROOT/C`` and its file ``F`` is
``ROOT/C/F``, so a team copies its channels into folders named by their ids and keeps its commands.
Where ABEJA takes a channel or ``CHANNEL/FILE``, an absolute local path or a storage URI (``s3://``,
``gs://``, ``https://``; a trigger's a prefix ending with ``/``) may stand instead.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from inferd.core.errors import InvalidInput
from inferd.platform.abeja import shapes
from inferd.platform.abeja.bodies import NewRun, NewTrigger, parse
from inferd.platform.abeja.extras import Extras
from inferd.platform.manager import Platform
from inferd.platform.records import Deployment, Run, RunState, Trigger, of_deployment
from inferd.storage.locations import is_remote

#: The one operator of ABEJA's ``input_data``/``output_template`` inferd reads, and the service name
#: of a trigger's input and output.
DATALAKE_OPERATOR = "$datalake:1"
DATALAKE_SERVICE = "datalake"
#: A run's state as ABEJA names it (ABEJA has no ``cancelled``: a cancelled run failed).
STATUSES = {
    RunState.PENDING: "PENDING",
    RunState.RUNNING: "RUNNING",
    RunState.SUCCEEDED: "SUCCEEDED",
    RunState.FAILED: "FAILED",
    RunState.CANCELLED: "FAILED",
}
#: How many of a run's last log lines ``describe-run-logs`` answers.
LOG_LINES = 1000


class Datalake:
    """The folder standing for ABEJA's DataLake (``root``), and where runs given no output write
    (``outputs``: one new folder each)."""

    def __init__(self, root: Path, outputs: Path) -> None:
        self.root, self.outputs = root.resolve(), outputs.resolve()

    def location(self, what: str, payload: str) -> str:
        """``CHANNEL`` or ``CHANNEL/FILE`` as a path under the root; an absolute path or storage URI as
        given. InvalidInput for a name that would leave the root."""
        if is_remote(payload) or payload.startswith("/"):
            return payload
        parts = PurePosixPath(payload).parts
        if not payload or any(part in ("..", ".") for part in parts) or "\\" in payload or "\0" in payload:
            raise InvalidInput(
                f"{what} {payload!r} must be CHANNEL or CHANNEL/FILE (a folder under the DataLake "
                f"folder {self.root}), an absolute path or a storage URI"
            )
        return str(self.root.joinpath(*parts))

    def named(self, location: str) -> str:
        """What `location` made of ``payload``: a path under the root as ``CHANNEL/FILE`` again."""
        if location.startswith("/"):
            path = Path(location)
            if path.is_relative_to(self.root) and path != self.root:
                return path.relative_to(self.root).as_posix()
        return location

    def new_output(self) -> str:
        return str(self.outputs / f"{secrets.token_hex(6)}")

    def is_default_output(self, output: str) -> bool:
        return Path(output).parent == self.outputs


class AbejaRuns:
    """Each run's (and each trigger's runs') environment is the deployment's ``default_environment``
    and then the body's ``environment``, over the version's own (its user parameters)."""

    def __init__(self, platform: Platform, datalake: Datalake, extras: Extras) -> None:
        self.platform, self.store, self.runs = platform, platform.store, platform.runs
        self.datalake, self.extras = datalake, extras
        #: ``models`` → ``ABEJA_TRAINING_RESULT_DIR`` (`inferd.platform.abeja.training_models`).
        self.training_models: Callable[[Mapping[str, str] | None], dict[str, str]] = lambda models: {}

    def _environment(
        self, deployment: Deployment, given: dict[str, str] | None, models: dict[str, str] | None = None
    ) -> dict[str, str]:
        """…and, given ``models`` (``-m``), the training model's folder as ``ABEJA_TRAINING_RESULT_DIR``."""
        return {
            **self.extras.default_environment(deployment.id),
            **(given or {}),
            **self.training_models(models),
        }

    # ---- runs ----

    async def submit(self, request: Request) -> Response:
        deployment = self.store.deployment(request.path_params["deployment"])
        body: NewRun = parse(NewRun, await request.body())
        if not body.input_data:
            raise InvalidInput(f"input_data is required: {{{DATALAKE_OPERATOR!r}: 'CHANNEL/FILE'}}")
        inputs = [self._operand("input_data", key, value) for key, value in body.input_data.items()]
        if body.output_template:
            ((key, value),) = _one("output_template", body.output_template)
            output = self._operand("output_template", key, value)
        else:
            output = self.datalake.new_output()
        environment = await asyncio.to_thread(self._environment, deployment, body.environment, body.models)
        run = await self.runs.submit(deployment.id, body.version_id, inputs, output, environment)
        return JSONResponse(self._run(run))

    async def list_runs(self, request: Request) -> Response:
        deployment = self.store.deployment(request.path_params["deployment"])
        runs = sorted(self.store.runs(deployment.id), key=lambda run: run.created_at, reverse=True)
        return JSONResponse({"entries": [self._run(run) for run in runs], "next_page_token": None})

    async def run(self, request: Request) -> Response:
        return JSONResponse(self._run(self._run_of(request)))

    async def logs(self, request: Request) -> Response:
        """The run's last lines, oldest first, as ABEJA's ``events`` (one page)."""
        run = self._run_of(request)
        events = [shapes.log_event(line) for line in self.runs.logs(run.id, LOG_LINES)]
        return JSONResponse({"events": events})

    async def recent_logs(self, request: Request) -> Response:
        run = self._run_of(request)
        events = [shapes.log_event(line) for line in reversed(self.runs.logs(run.id, LOG_LINES))]
        return JSONResponse({"events": events, "next_backward_token": None, "next_forward_token": None})

    def _operand(self, what: str, operator: str, payload: str) -> str:
        if operator != DATALAKE_OPERATOR:
            raise InvalidInput(
                f"{what}: operator {operator!r} is not read by inferd; use {DATALAKE_OPERATOR!r} with "
                "CHANNEL/FILE, an absolute path or a storage URI"
            )
        return self.datalake.location(what, payload)

    def _run_of(self, request: Request) -> Run:
        deployment = self.store.deployment(request.path_params["deployment"])
        return of_deployment(self.store.run(request.path_params["run"]), deployment)

    def _run(self, run: Run) -> dict[str, Any]:
        output = None
        if not self.datalake.is_default_output(run.output):
            output = {DATALAKE_OPERATOR: self.datalake.named(run.output)}
        shape: dict[str, Any] = {
            "run_id": run.id,
            "deployment_id": run.deployment_id,
            "models": {},
            "model_version": self.store.version(run.version_id).label,
            "model_version_id": run.version_id,
            "input_data": {DATALAKE_OPERATOR: self.datalake.named(run.inputs[0])},
            "inputs": list(run.inputs),
            "output_template": output,
            "output": run.output,
            "retry_count": 0,
            "status": STATUSES[run.state],
            "user_env_vars": {key: str(value) for key, value in run.parameters.items()},
            "created_at": shapes.time_text(run.created_at),
            "modified_at": shapes.time_text(run.finished_at or run.created_at),
        }
        if run.trigger_id:
            shape["trigger_id"] = run.trigger_id
        if run.reason:
            shape["reason"] = run.reason
        return shape

    # ---- triggers ----

    async def create_trigger(self, request: Request) -> Response:
        deployment = self.store.deployment(request.path_params["deployment"])
        body: NewTrigger = parse(NewTrigger, await request.body())
        watched = self._service("input", body.input_service_name, body.input_service_id)
        if is_remote(watched) and not watched.endswith("/"):
            watched += "/"
        elif not is_remote(watched) and Path(watched).is_relative_to(self.datalake.root):
            Path(watched).mkdir(parents=True, exist_ok=True)  # a channel: its folder may not exist yet
        if (body.output_service_name is None) != (body.output_service_id is None):
            raise InvalidInput("output_service_name and output_service_id go together")
        output = (
            self._service("output", body.output_service_name, body.output_service_id)
            if body.output_service_name is not None and body.output_service_id is not None
            else self.datalake.new_output()
        )
        trigger = await self.runs.create_trigger(
            deployment.id,
            body.version_id,
            watched,
            output,
            parameters=await asyncio.to_thread(self._environment, deployment, body.environment, body.models),
        )
        return JSONResponse(self._trigger(request, trigger))

    async def list_triggers(self, request: Request) -> Response:
        deployment = self.store.deployment(request.path_params["deployment"])
        entries = [self._trigger(request, trigger) for trigger in self.store.triggers(deployment.id)]
        return JSONResponse({"entries": entries})

    async def trigger(self, request: Request) -> Response:
        return JSONResponse(self._trigger(request, self._trigger_of(request)[1]))

    async def delete_trigger(self, request: Request) -> Response:
        trigger = self._trigger_of(request)[1]
        self.runs.delete_trigger(trigger.id)
        return JSONResponse({"message": f"{trigger.id} deleted"})

    async def trigger_runs(self, request: Request) -> Response:
        trigger = self._trigger_of(request)[1]
        runs = sorted(self.store.runs(trigger_id=trigger.id), key=lambda run: run.created_at, reverse=True)
        return JSONResponse({"entries": [self._run(run) for run in runs], "next_page_token": None})

    def _service(self, what: str, name: str, service_id: str) -> str:
        if name != DATALAKE_SERVICE:
            raise InvalidInput(
                f"{what}_service_name {name!r}: inferd watches and writes {DATALAKE_SERVICE!r} only "
                "(a channel folder, an absolute path or a storage URI)"
            )
        return self.datalake.location(f"{what}_service_id", service_id)

    def _trigger_of(self, request: Request) -> tuple[Deployment, Trigger]:
        deployment = self.store.deployment(request.path_params["deployment"])
        return deployment, of_deployment(self.store.trigger(request.path_params["trigger"]), deployment)

    def _trigger(self, request: Request, trigger: Trigger) -> dict[str, Any]:
        default_output = self.datalake.is_default_output(trigger.output)
        return {
            "trigger_id": trigger.id,
            "organization_id": request.path_params["organization"],
            "deployment_id": trigger.deployment_id,
            "models": {},
            "model_version": self.store.version(trigger.version_id).label,
            "model_version_id": trigger.version_id,
            "input_service_name": DATALAKE_SERVICE,
            "input_service_id": self.datalake.named(trigger.input),
            "output_service_name": None if default_output else DATALAKE_SERVICE,
            "output_service_id": None if default_output else self.datalake.named(trigger.output),
            "input": trigger.input,
            "output": trigger.output,
            "enabled": trigger.enabled,
            "retry_count": 0,
            "user_env_vars": {key: str(value) for key, value in trigger.parameters.items()},
            "created_at": shapes.time_text(trigger.created_at),
            "modified_at": shapes.time_text(trigger.created_at),
        }


def _one(what: str, value: dict[str, str]) -> list[tuple[str, str]]:
    if len(value) != 1:
        example = f"{{{DATALAKE_OPERATOR!r}: 'CHANNEL'}}"
        raise InvalidInput(f"{what} names one output ({example}), not {len(value)}")
    return list(value.items())
