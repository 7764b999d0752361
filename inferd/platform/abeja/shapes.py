"""inferd's records in the JSON shapes ABEJA's API answers (field names and values as its SDK documents
them), and its error body. Ids are inferd's own (``dep-…``, ``ver-…``, ``svc-…``, ``end-…``): ABEJA's
clients pass them through as opaque strings."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from inferd.platform.abeja.extras import ServiceExtras, VersionExtras
from inferd.platform.records import Deployment, Endpoint, Service, ServiceState, Version

#: A service's state as ABEJA names it.
STATUSES = {
    ServiceState.STARTING: "IN_PROGRESS",
    ServiceState.RUNNING: "READY",
    ServiceState.STOPPING: "IN_PROGRESS",
    ServiceState.STOPPED: "STOPPED",
    ServiceState.FAILED: "FAILED",
}
#: The ``error`` word of ABEJA's error body, by HTTP status.
ERROR_WORDS = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    501: "not_implemented",
    502: "bad_gateway",
    503: "service_unavailable",
}


def error(status: int, description: str) -> dict[str, str]:
    return {"error": ERROR_WORDS.get(status, "internal_server_error"), "error_description": description}


def time_text(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def deployment(
    record: Deployment, default_environment: dict[str, str], services: list[Any]
) -> dict[str, Any]:
    return {
        "deployment_id": record.id,
        "name": record.name,
        "description": record.description,
        "default_environment": default_environment,
        "services": services,
        "runs": [],
        "triggers": [],
        "created_at": time_text(record.created_at),
        "modified_at": time_text(record.created_at),
    }


def version(record: Version, extras: VersionExtras | None) -> dict[str, Any]:
    extras = extras or VersionExtras(handler=record.target if ":" in record.target else "main:handler")
    return {
        "deployment_id": record.deployment_id,
        "version": record.label,
        "version_id": record.id,
        "handler": extras.handler,
        "image": extras.image,
        "user_parameters": extras.user_parameters,
        "digest": record.digest,
        "size": record.size,
        "created_at": time_text(record.created_at),
        "modified_at": time_text(record.created_at),
    }


def service(record: Service, label: str, extras: ServiceExtras | None) -> dict[str, Any]:
    extras = extras or ServiceExtras(
        instance_number=record.min_replicas, user_env_vars=dict(record.environment)
    )
    shape = {
        "service_id": record.id,
        "deployment_id": record.deployment_id,
        "models": {},
        "model_version": label,
        "model_version_id": record.version_id,
        "status": STATUSES[record.state],
        "instance_type": extras.instance_type,
        "instance_number": extras.instance_number,
        "min_instance_number": record.min_replicas,
        "max_instance_number": record.max_replicas,
        "enable_autoscale": extras.enable_autoscale,
        "user_env_vars": extras.user_env_vars,
        "created_at": time_text(record.created_at),
        "modified_at": time_text(record.updated_at),
    }
    if record.reason:
        shape["reason"] = record.reason
    return shape


def endpoint(record: Endpoint, alias: str) -> dict[str, Any]:
    routed = [route.service_id for route in record.routes if route.weight]
    return {
        "endpoint_id": record.id,
        "custom_alias": alias,
        "service_id": routed[0] if len(routed) == 1 else None,
        "gateway_path": f"/e/{record.name}/",
        "created_at": time_text(record.created_at),
    }


def log_event(line: str) -> dict[str, Any]:
    """A log line as one of ABEJA's log ``events``: an ABEJA runtime's JSON line gives its message and
    timestamp; any other line is the message, without a time."""
    try:
        found = json.loads(line)
    except ValueError:
        found = None
    if isinstance(found, dict) and "message" in found:
        return {"message": str(found["message"]), "timestamp": found.get("timestamp")}
    return {"message": line, "timestamp": None}
