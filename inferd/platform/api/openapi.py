"""The OpenAPI 3 document of the control API, at ``GET /platform/v1/openapi.json``: request bodies from
their pydantic models, records as objects, errors as inferd's ``{"error": ...}``."""

from __future__ import annotations

from typing import Any

from inferd.platform.api.bodies import (
    EndpointBody,
    NewDeployment,
    NewRun,
    NewService,
    NewTrigger,
    ScalingBody,
    TriggerChange,
)

PREFIX = "/platform/v1"
_ERROR = {
    "description": "what was wrong",
    "content": {
        "application/json": {"schema": {"type": "object", "properties": {"error": {"type": "string"}}}}
    },
}
_RECORD = {"type": "object"}
#: The conditions an endpoint switch takes: the ``etag`` (also the ``ETag`` header) of the endpoint
#: as the client read it, or ``*`` to create it only if it does not exist.
_CONDITIONS = [
    {"name": "If-Match", "in": "header", "required": False, "schema": {"type": "string"}},
    {"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string", "enum": ["*"]}},
]
_BODIES = {
    model.__name__: model
    for model in (NewDeployment, NewService, ScalingBody, EndpointBody, NewRun, NewTrigger, TriggerChange)
}
_VERSION_FORM = {
    "multipart/form-data": {
        "schema": {
            "type": "object",
            "required": ["archive", "label"],
            "properties": {
                "archive": {"type": "string", "format": "binary", "description": "tar, tar.gz or zip"},
                "label": {"type": "string"},
                "target": {"type": "string", "default": "."},
                "dialect": {"type": "string", "default": "auto"},
                "environment": {"type": "string", "description": "a JSON object of strings"},
            },
        }
    }
}

#: (path, method, summary, request body: a model name, "form" or None, success status, list answer)
OPERATIONS: list[tuple[str, str, str, str | None, int, bool]] = [
    ("/deployments", "get", "List deployments", None, 200, True),
    ("/deployments", "post", "Create a deployment", "NewDeployment", 201, False),
    ("/deployments/{deployment}", "get", "A deployment (by id or name)", None, 200, False),
    ("/deployments/{deployment}", "delete", "Delete a deployment and its versions", None, 204, False),
    ("/deployments/{deployment}/versions", "get", "List a deployment's versions", None, 200, True),
    (
        "/deployments/{deployment}/versions",
        "post",
        "Upload a version (a project archive)",
        "form",
        201,
        False,
    ),
    ("/deployments/{deployment}/services", "get", "List a deployment's services", None, 200, True),
    ("/deployments/{deployment}/services", "post", "Start a service of a version", "NewService", 201, False),
    ("/deployments/{deployment}/endpoints", "get", "List a deployment's endpoints", None, 200, True),
    (
        "/deployments/{deployment}/endpoints/{name}",
        "put",
        "Create or switch an endpoint",
        "EndpointBody",
        200,
        False,
    ),
    ("/versions/{version}", "get", "A version", None, 200, False),
    ("/versions/{version}", "delete", "Delete a version no service uses", None, 204, False),
    ("/versions/{version}/archive", "get", "Download a version's bundle (tar.gz)", None, 200, False),
    ("/services/{service}", "get", "A service, with its state", None, 200, False),
    ("/services/{service}", "delete", "Stop and delete a service", None, 204, False),
    (
        "/services/{service}/scaling",
        "put",
        "Change its replicas' bounds and target",
        "ScalingBody",
        200,
        False,
    ),
    ("/services/{service}/replicas", "get", "Its replicas beyond the first", None, 200, True),
    ("/services/{service}/start", "post", "Start a stopped or failed service", None, 200, False),
    ("/services/{service}/stop", "post", "Stop a service (after its in-flight requests)", None, 200, False),
    ("/services/{service}/logs", "get", "The last lines of a service's log", None, 200, False),
    ("/services/{service}/logs/follow", "get", "Its log, then new lines (text)", None, 200, False),
    ("/services/{service}/metrics", "get", "Requests, errors, latency from its /metrics", None, 200, False),
    ("/endpoints/{endpoint}", "get", "An endpoint, with its weights", None, 200, False),
    ("/endpoints/{endpoint}", "delete", "Delete an endpoint", None, 204, False),
    ("/deployments/{deployment}/runs", "get", "List a deployment's runs", None, 200, True),
    ("/deployments/{deployment}/runs", "post", "Submit a run of a version over inputs", "NewRun", 201, False),
    ("/runs/{run}", "get", "A run, with its state", None, 200, False),
    ("/runs/{run}/cancel", "post", "Cancel a pending or running run", None, 200, False),
    ("/runs/{run}/logs", "get", "The last lines of a run's log", None, 200, False),
    ("/deployments/{deployment}/triggers", "get", "List a deployment's triggers", None, 200, True),
    (
        "/deployments/{deployment}/triggers",
        "post",
        "Create a trigger: a run for each new file under a folder or prefix",
        "NewTrigger",
        201,
        False,
    ),
    ("/triggers/{trigger}", "get", "A trigger", None, 200, False),
    ("/triggers/{trigger}", "patch", "Enable or disable a trigger", "TriggerChange", 200, False),
    ("/triggers/{trigger}", "delete", "Delete a trigger (its runs stay)", None, 204, False),
    (
        "/training",
        "get",
        "ABEJA training: definitions with their versions, newest jobs and training models",
        None,
        200,
        False,
    ),
    (
        "/training/jobs/{job}/statistics",
        "get",
        "A training job's statistics and their history",
        None,
        200,
        False,
    ),
]


def _operation(path: str, summary: str, body: str | None, status: int, many: bool) -> dict[str, Any]:
    schema = {"type": "array", "items": _RECORD} if many else _RECORD
    success = (
        {"description": "done"}
        if status == 204
        else {
            "description": "the record",
            "content": {"application/json": {"schema": schema}},
        }
    )
    operation: dict[str, Any] = {
        "summary": summary,
        "parameters": [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in (part[1:-1] for part in path.split("/") if part.startswith("{"))
        ],
        "responses": {str(status): success, "4XX": _ERROR},
    }
    if body == "form":
        operation["requestBody"] = {"required": True, "content": _VERSION_FORM}
    elif body is not None:
        reference = {"$ref": f"#/components/schemas/{body}"}
        operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": reference}}}
    return operation


def document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for path, method, summary, body, status, many in OPERATIONS:
        paths.setdefault(PREFIX + path, {})[method] = _operation(path, summary, body, status, many)
    switch = paths[PREFIX + "/deployments/{deployment}/endpoints/{name}"]["put"]
    switch["parameters"] += _CONDITIONS
    switch["responses"]["412"] = {**_ERROR, "description": "the endpoint changed since it was read"}
    schemas: dict[str, Any] = {}
    for name, model in _BODIES.items():
        found = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(found.pop("$defs", {}))
        schemas[name] = found
    return {
        "openapi": "3.0.3",
        "info": {"title": "inferd platform control API", "version": "1"},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }


DOCUMENT = document()
