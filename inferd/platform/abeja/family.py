"""The ABEJA-compatible API as one family of routes (`inferd.platform.api.app.FAMILIES`): the table
of paths, methods and handlers of `AbejaAPI`, runs, the DataLake, datasets and training, put
together from the control process's settings."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from inferd.platform.abeja.channel_folders import ChannelFolders
from inferd.platform.abeja.channel_index import ChannelIndex
from inferd.platform.abeja.channels import DatalakeChannels
from inferd.platform.abeja.datasets import DatasetsAPI, dataset_routes
from inferd.platform.abeja.datasets_store import DatasetStore
from inferd.platform.abeja.routes import PREFIX, AbejaAPI, Handler, abeja_errors
from inferd.platform.abeja.runs import AbejaRuns, Datalake
from inferd.platform.abeja.training_table import training_routes
from inferd.platform.manager import Platform
from inferd.platform.settings import PlatformSettings
from inferd.protocols.control import ControlRoute
from inferd.server.limits import BodyLimit, Sized, SizedControlRoute

DATA_METHODS = ["GET", "POST", "PUT"]
ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def routes(api: AbejaAPI, runs: AbejaRuns, channels: DatalakeChannels) -> list[BaseRoute]:
    """The table: (path, methods, handler); a route whose methods change state is a `ControlRoute`."""
    d = "/deployments/{deployment}"
    r, t = f"{d}/runs/{{run}}", f"{d}/triggers/{{trigger}}"
    c = "/channels/{channel}"
    table: list[tuple[str, list[str], Handler]] = [
        ("", ["GET"], api.organization),
        ("/channels", ["GET"], channels.list_channels),
        ("/channels", ["POST"], channels.create_channel),
        (c, ["GET"], channels.channel),
        (c, ["PATCH"], channels.update_channel),
        (f"{c}/archive", ["POST"], channels.archive),
        (f"{c}/unarchive", ["POST"], channels.unarchive),
        ("/deployments", ["GET"], api.deployments),
        ("/deployments", ["POST"], api.create_deployment),
        (d, ["GET"], api.deployment_record),
        (d, ["DELETE"], api.delete_deployment),
        (f"{d}/versions", ["GET"], api.versions),
        (f"{d}/versions", ["POST"], api.create_version),
        (f"{d}/versions/{{version}}", ["GET"], api.version),
        (f"{d}/versions/{{version}}", ["DELETE"], api.delete_version),
        (f"{d}/versions/{{version}}/source", ["PUT"], api.upload),
        (f"{d}/versions/{{version}}/download", ["GET"], api.download),
        (f"{d}/versions/{{version}}/source.tar.gz", ["GET"], api.archive),
        (f"{d}/services", ["GET"], api.services),
        (f"{d}/services", ["POST"], api.create_service),
        (f"{d}/services/{{service}}", ["GET"], api.service),
        (f"{d}/services/{{service}}", ["DELETE"], api.delete_service),
        (f"{d}/services/{{service}}/start", ["POST"], api.start_service),
        (f"{d}/services/{{service}}/stop", ["POST"], api.stop_service),
        (f"{d}/services/{{service}}/logs", ["GET"], api.service_logs),
        (f"{d}/services/{{service}}/recentlogs", ["GET"], api.service_logs),
        (f"{d}/endpoints", ["GET"], api.endpoints),
        (f"{d}/endpoints", ["POST"], api.create_endpoint),
        (f"{d}/endpoints/{{endpoint}}", ["GET"], api.endpoint),
        (f"{d}/endpoints/{{endpoint}}", ["PATCH"], api.update_endpoint),
        (f"{d}/endpoints/{{endpoint}}", ["DELETE"], api.delete_endpoint),
        (f"{d}/runs", ["GET"], runs.list_runs),
        (f"{d}/runs", ["POST"], runs.submit),
        (r, ["GET"], runs.run),
        (f"{r}/logs", ["GET"], runs.logs),
        (f"{r}/recentlogs", ["GET"], runs.recent_logs),
        (f"{d}/triggers", ["GET"], runs.list_triggers),
        (f"{d}/triggers", ["POST"], runs.create_trigger),
        (t, ["GET"], runs.trigger),
        (t, ["DELETE"], runs.delete_trigger),
        (f"{t}/runs", ["GET"], runs.trigger_runs),
        (f"{d}/git", ALL_METHODS, api.not_built),
        (f"{d}/git/{{rest:path}}", ALL_METHODS, api.not_built),
    ]
    # the DataLake's files, outside the organization as ABEJA has them
    files: list[tuple[str, list[str], Handler]] = [
        (c, ["GET"], channels.list_files),
        (f"{c}/upload", ["POST"], channels.upload),
        (f"{c}/{{file}}", ["GET"], channels.file),
        (f"{c}/{{file}}", ["DELETE"], channels.delete_file),
        (f"{c}/{{file}}/content", ["GET"], channels.content),
        (f"{c}/{{file}}/metadata", ["PUT"], channels.put_metadata),
    ]
    upload = BodyLimit(api.max_upload, "INFERD_MAX_BUNDLE_SIZE")
    built: list[BaseRoute] = [
        SizedControlRoute(path, abeja_errors(handler), methods=methods, body_limit=upload)
        if handler in (api.upload, channels.upload)
        else (Route if methods == ["GET"] else ControlRoute)(path, abeja_errors(handler), methods=methods)
        for path, methods, handler in [(PREFIX + path, m, h) for path, m, h in table] + files
    ]
    # the data path: inference, which changes nothing (a plain route, like the gateway's), with the
    # gateway's body limit
    inference = BodyLimit(api.max_inference_body, "INFERD_MAX_BODY_SIZE")
    built += [
        Sized(path, abeja_errors(handler), methods=DATA_METHODS, body_limit=inference)
        for path, handler in (
            ("/deployments/{deployment}", api.call_deployment),
            ("/deployments/{deployment}/services/{service}", api.call_service),
        )
    ]
    return built


def abeja_routes(platform: Platform, settings: PlatformSettings) -> list[BaseRoute]:
    """The family `inferd.platform.api.app.FAMILIES` serves."""
    root = settings.data_dir / "platform"
    datalake = Datalake(settings.abeja_datalake_dir or root / "datalake", root / "abeja-outputs")
    api = AbejaAPI(platform, settings)
    folders = ChannelFolders(datalake.root)
    channels = DatalakeChannels(folders, ChannelIndex(platform.store.path), api.presigner, api.max_upload)
    datasets = dataset_routes(DatasetsAPI(DatasetStore(platform.store.path)), PREFIX, abeja_errors)
    training, models = training_routes(platform, settings, api.presigner, abeja_errors, PREFIX)
    runs = AbejaRuns(platform, datalake, api.extras)
    api.training_models = runs.training_models = models
    return routes(api, runs, channels) + datasets + training
