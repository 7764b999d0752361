"""The control API's runs and triggers (``/platform/v1``): submit a run of a version over input files
into an output folder, follow its state and log, cancel it; create, list, enable or disable and delete
triggers. A route family of the control app; every route that changes state is a `ControlRoute`."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from inferd.core.errors import InvalidInput
from inferd.platform.api.bodies import NewRun, NewTrigger, TriggerChange, parse
from inferd.platform.api.routes import PREFIX, Handler, answer
from inferd.platform.manager import Platform
from inferd.platform.settings import PlatformSettings
from inferd.protocols.control import ControlRoute


class RunsAPI:
    def __init__(self, platform: Platform) -> None:
        self.store = platform.store
        self.runs = platform.runs

    # ---- runs

    async def list_runs(self, request: Request) -> Response:
        return answer(self.store.runs(request.path_params["deployment"]))

    async def submit(self, request: Request) -> Response:
        body: NewRun = parse(NewRun, await request.body())
        run = await self.runs.submit(
            request.path_params["deployment"],
            body.version,
            body.inputs,
            body.output,
            body.parameters,
            body.timeout,
        )
        return answer(run, 201)

    async def run(self, request: Request) -> Response:
        return answer(self.store.run(request.path_params["run"]))

    async def cancel(self, request: Request) -> Response:
        return answer(await self.runs.cancel(request.path_params["run"]))

    async def logs(self, request: Request) -> Response:
        run = self.store.run(request.path_params["run"])
        try:
            lines = min(10_000, max(1, int(request.query_params.get("lines", "100"))))
        except ValueError:
            raise InvalidInput("lines must be a whole number") from None
        return answer({"run": run.id, "state": run.state, "lines": self.runs.logs(run.id, lines)})

    # ---- triggers

    async def list_triggers(self, request: Request) -> Response:
        return answer(self.store.triggers(request.path_params["deployment"]))

    async def create_trigger(self, request: Request) -> Response:
        body: NewTrigger = parse(NewTrigger, await request.body())
        trigger = await self.runs.create_trigger(
            request.path_params["deployment"],
            body.version,
            body.input,
            body.output,
            body.enabled,
            body.parameters,
        )
        return answer(trigger, 201)

    async def trigger(self, request: Request) -> Response:
        return answer(self.store.trigger(request.path_params["trigger"]))

    async def change_trigger(self, request: Request) -> Response:
        body: TriggerChange = parse(TriggerChange, await request.body())
        return answer(self.runs.set_trigger_enabled(request.path_params["trigger"], body.enabled))

    async def delete_trigger(self, request: Request) -> Response:
        self.runs.delete_trigger(request.path_params["trigger"])
        return Response(status_code=204)


def run_routes(platform: Platform, settings: PlatformSettings) -> list[BaseRoute]:
    api = RunsAPI(platform)
    table: list[tuple[str, str, Handler]] = [
        ("/deployments/{deployment}/runs", "GET", api.list_runs),
        ("/deployments/{deployment}/runs", "POST", api.submit),
        ("/runs/{run}", "GET", api.run),
        ("/runs/{run}/cancel", "POST", api.cancel),
        ("/runs/{run}/logs", "GET", api.logs),
        ("/deployments/{deployment}/triggers", "GET", api.list_triggers),
        ("/deployments/{deployment}/triggers", "POST", api.create_trigger),
        ("/triggers/{trigger}", "GET", api.trigger),
        ("/triggers/{trigger}", "PATCH", api.change_trigger),
        ("/triggers/{trigger}", "DELETE", api.delete_trigger),
    ]
    return [
        (Route if method == "GET" else ControlRoute)(PREFIX + path, handler, methods=[method])
        for path, method, handler in table
    ]
