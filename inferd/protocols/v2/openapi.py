"""An OpenAPI 3 document of the V2 REST routes inferd serves, at ``GET /v2/openapi.json``: for API
tools and for the schemathesis run of the fuzz suite, which checks every answer against it."""

from __future__ import annotations

from typing import Any

from inferd.core.types import DTYPES

PATH = "/v2/openapi.json"
_ERROR = {"$ref": "#/components/responses/Error"}
_NAME = {"name": "name", "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
_PARAMETERS = {
    "type": "object",
    "additionalProperties": {"anyOf": [{"type": "boolean"}, {"type": "number"}, {"type": "string"}]},
}
_NO_BODY = {"description": "no body"}
_STATS = {
    "type": "object",
    "required": ["model_stats"],
    "properties": {"model_stats": {"type": "array", "items": {"type": "object"}}},
}
_STRING = {"type": "string"}


def _json(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A response (or request body) of JSON ``schema``."""
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _object(required: list[str], **properties: Any) -> dict[str, Any]:
    """A JSON object schema; OpenAPI 3.0 wants ``required`` left out rather than empty."""
    return {"type": "object", **({"required": required} if required else {}), "properties": properties}


def _tensor(data_required: bool) -> dict[str, Any]:
    return _object(
        ["name", "shape", "datatype", *(["data"] if data_required else [])],
        name=_STRING,
        shape={"type": "array", "items": {"type": "integer", "minimum": 0}},
        datatype={"type": "string", "enum": sorted(DTYPES)},
        parameters=_PARAMETERS,
        data={},
    )


_METADATA_TENSOR = _object(
    ["name", "datatype", "shape"],
    name=_STRING,
    datatype=_STRING,
    shape={"type": "array", "items": {"type": "integer"}},
)

DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "inferd V2 Open Inference Protocol", "version": "2"},
    "paths": {
        "/v2": {
            "get": {
                "summary": "Server metadata",
                "responses": {
                    "200": _json(
                        "metadata",
                        _object(
                            ["name", "version", "extensions"],
                            name=_STRING,
                            version=_STRING,
                            extensions={"type": "array", "items": _STRING},
                        ),
                    )
                },
            }
        },
        "/v2/health/live": {"get": {"summary": "Liveness", "responses": {"200": _NO_BODY, "400": _NO_BODY}}},
        "/v2/health/ready": {
            "get": {"summary": "Readiness", "responses": {"200": _NO_BODY, "400": _NO_BODY}}
        },
        "/v2/models/{name}": {
            "get": {
                "summary": "Model metadata",
                "parameters": [_NAME],
                "responses": {
                    "200": _json(
                        "metadata",
                        _object(
                            ["name", "platform", "inputs", "outputs"],
                            name=_STRING,
                            versions={"type": "array", "items": _STRING},
                            platform=_STRING,
                            inputs={"type": "array", "items": _METADATA_TENSOR},
                            outputs={"type": "array", "items": _METADATA_TENSOR},
                        ),
                    ),
                    "404": _ERROR,
                    "503": _ERROR,
                },
            }
        },
        "/v2/models/{name}/ready": {
            "get": {
                "summary": "Model readiness",
                "parameters": [_NAME],
                "responses": {"200": _NO_BODY, "400": _NO_BODY, "404": _ERROR},
            }
        },
        "/v2/models/stats": {
            "get": {
                "summary": "Triton's statistics extension: every loaded model",
                "responses": {"200": _json("model_stats", _STATS)},
            }
        },
        "/v2/models/{name}/stats": {
            "get": {
                "summary": "Triton's statistics extension: one model's loaded versions",
                "parameters": [_NAME],
                "responses": {"200": _json("model_stats", _STATS), "404": _ERROR},
            }
        },
        "/v2/models/{name}/config": {
            "get": {
                "summary": "Triton's model configuration extension",
                "parameters": [_NAME],
                "responses": {
                    "200": _json("Triton's ModelConfig", _object(["name"], name=_STRING)),
                    "404": _ERROR,
                    "503": _ERROR,
                },
            }
        },
        "/v2/models/{name}/infer": {
            "post": {
                "summary": "Inference",
                "parameters": [_NAME],
                "requestBody": {
                    "required": True,
                    **_json(
                        "inputs",
                        _object(
                            ["inputs"],
                            id=_STRING,
                            parameters=_PARAMETERS,
                            inputs={"type": "array", "items": _tensor(True)},
                            outputs={
                                "type": "array",
                                "items": _object(["name"], name=_STRING, parameters=_PARAMETERS),
                            },
                        ),
                    ),
                },
                "responses": {
                    "200": _json(
                        "outputs",
                        _object(
                            ["model_name", "outputs"],
                            model_name=_STRING,
                            model_version=_STRING,
                            id=_STRING,
                            parameters=_PARAMETERS,
                            outputs={"type": "array", "items": _tensor(False)},
                        ),
                    ),
                    **{status: _ERROR for status in ("400", "404", "413", "503", "504")},
                },
            }
        },
        "/v2/repository/index": {
            "post": {
                "summary": "Model repository index",
                "requestBody": _json("filter", _object([], ready={"type": "boolean"})),
                "responses": {
                    "200": _json(
                        "models",
                        {
                            "type": "array",
                            "items": _object(
                                ["name", "state"],
                                name=_STRING,
                                version=_STRING,
                                state=_STRING,
                                reason=_STRING,
                            ),
                        },
                    ),
                    "400": _ERROR,
                },
            }
        },
        **{
            f"/v2/repository/models/{{name}}/{action}": {
                "post": {
                    "summary": f"Model repository: {action}",
                    "parameters": [_NAME],
                    "responses": {"200": _NO_BODY, "400": _ERROR, "404": _ERROR},
                }
            }
            for action in ("load", "unload")
        },
    },
    "components": {"responses": {"Error": _json("what was wrong", _object(["error"], error=_STRING))}},
}
