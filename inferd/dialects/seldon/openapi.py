"""``/seldon.json``: an OpenAPI 3.0.0 description of the microservice's message routes."""

from __future__ import annotations

from typing import Any

from inferd import __version__

_MESSAGE = {"$ref": "#/components/schemas/SeldonMessage"}
_ROUTES = {
    "/predict": ("Predict", "predict", _MESSAGE),
    "/send-feedback": ("Feedback", "send_feedback", {"$ref": "#/components/schemas/Feedback"}),
    "/transform-input": ("TransformInput", "transform_input", _MESSAGE),
    "/transform-output": ("TransformOutput", "transform_output", _MESSAGE),
    "/route": ("Route", "route", _MESSAGE),
    "/aggregate": ("Aggregate", "aggregate", {"$ref": "#/components/schemas/SeldonMessageList"}),
}


def _operation(operation_id: str, method: str, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "operationId": operation_id,
        "summary": f"Call the component's {method}",
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": body},
                "application/x-www-form-urlencoded": {
                    "schema": {"type": "object", "properties": {"json": {"type": "string"}}}
                },
            },
        },
        "responses": {
            "200": {"description": "The answer", "content": {"application/json": {"schema": _MESSAGE}}},
            "400": {"description": "Bad request data", "content": {"application/json": {"schema": _MESSAGE}}},
            "500": {
                "description": "The component failed",
                "content": {"application/json": {"schema": _MESSAGE}},
            },
        },
    }


_DATA = {
    "type": "object",
    "properties": {
        "names": {"type": "array", "items": {"type": "string"}},
        "tensor": {
            "type": "object",
            "properties": {
                "shape": {"type": "array", "items": {"type": "integer"}},
                "values": {"type": "array", "items": {"type": "number"}},
            },
        },
        "ndarray": {"type": "array", "items": {}},
        "tftensor": {"type": "object"},
    },
}
_META = {
    "type": "object",
    "properties": {
        "puid": {"type": "string"},
        "tags": {"type": "object", "additionalProperties": {}},
        "routing": {"type": "object", "additionalProperties": {"type": "integer"}},
        "requestPath": {"type": "object", "additionalProperties": {"type": "string"}},
        "metrics": {"type": "array", "items": {"$ref": "#/components/schemas/Metric"}},
    },
}

DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.0",
    "info": {
        "title": "Seldon microservice API (served by inferd)",
        "version": __version__,
        "description": "The internal API of a Seldon Core v1 component: models, transformers, routers "
        "and combiners.",
    },
    "paths": {
        path: {method.lower(): _operation(op, name, body) for method in ("GET", "POST")}
        for path, (op, name, body) in _ROUTES.items()
    },
    "components": {
        "schemas": {
            "SeldonMessage": {
                "type": "object",
                "properties": {
                    "status": {"$ref": "#/components/schemas/Status"},
                    "meta": _META,
                    "data": _DATA,
                    "binData": {"type": "string", "format": "byte"},
                    "strData": {"type": "string"},
                    "jsonData": {},
                },
            },
            "SeldonMessageList": {
                "type": "object",
                "properties": {
                    "seldonMessages": {"type": "array", "items": _MESSAGE},
                },
            },
            "Feedback": {
                "type": "object",
                "properties": {
                    "request": _MESSAGE,
                    "response": _MESSAGE,
                    "reward": {"type": "number"},
                    "truth": _MESSAGE,
                },
            },
            "Status": {
                "type": "object",
                "properties": {
                    "code": {"type": "integer"},
                    "info": {"type": "string"},
                    "reason": {"type": "string"},
                    "status": {"type": "string", "enum": ["SUCCESS", "FAILURE"]},
                },
            },
            "Metric": {
                "type": "object",
                "properties": {
                    "key": {"type": "string"},
                    "type": {"type": "string", "enum": ["COUNTER", "GAUGE", "TIMER"]},
                    "value": {"type": "number"},
                    "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
        }
    },
}
