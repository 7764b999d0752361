"""An OpenAPI 3 document of the V2 REST routes inferd serves, at ``GET /v2/openapi.json``: for API
tools and for the schemathesis run of the fuzz suite, which checks every answer against it."""

from __future__ import annotations

from typing import Any

PATH = "/v2/openapi.json"
_ERROR = {"$ref": "#/components/responses/Error"}
_NAME = {"name": "name", "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
_PARAMETERS = {
    "type": "object",
    "additionalProperties": {"anyOf": [{"type": "boolean"}, {"type": "number"}, {"type": "string"}]},
}
_NO_BODY = {"description": "no body"}


def _tensor(data_required: bool) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["name", "shape", "datatype", *(["data"] if data_required else [])],
        "properties": {
            "name": {"type": "string"},
            "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
            "datatype": {
                "type": "string",
                "enum": [
                    "BOOL",
                    "UINT8",
                    "UINT16",
                    "UINT32",
                    "UINT64",
                    "INT8",
                    "INT16",
                    "INT32",
                    "INT64",
                    "FP16",
                    "FP32",
                    "FP64",
                    "BYTES",
                ],
            },
            "parameters": _PARAMETERS,
            "data": {},
        },
    }


_METADATA_TENSOR = {
    "type": "object",
    "required": ["name", "datatype", "shape"],
    "properties": {
        "name": {"type": "string"},
        "datatype": {"type": "string"},
        "shape": {"type": "array", "items": {"type": "integer"}},
    },
}

DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "inferd V2 Open Inference Protocol", "version": "2"},
    "paths": {
        "/v2": {
            "get": {
                "summary": "Server metadata",
                "responses": {
                    "200": {
                        "description": "metadata",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["name", "version", "extensions"],
                                    "properties": {
                                        "name": {"type": "string"},
                                        "version": {"type": "string"},
                                        "extensions": {"type": "array", "items": {"type": "string"}},
                                    },
                                }
                            }
                        },
                    }
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
                    "200": {
                        "description": "metadata",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["name", "platform", "inputs", "outputs"],
                                    "properties": {
                                        "name": {"type": "string"},
                                        "versions": {"type": "array", "items": {"type": "string"}},
                                        "platform": {"type": "string"},
                                        "inputs": {"type": "array", "items": _METADATA_TENSOR},
                                        "outputs": {"type": "array", "items": _METADATA_TENSOR},
                                    },
                                }
                            }
                        },
                    },
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
        "/v2/models/{name}/infer": {
            "post": {
                "summary": "Inference",
                "parameters": [_NAME],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["inputs"],
                                "properties": {
                                    "id": {"type": "string"},
                                    "parameters": _PARAMETERS,
                                    "inputs": {"type": "array", "items": _tensor(True)},
                                    "outputs": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["name"],
                                            "properties": {
                                                "name": {"type": "string"},
                                                "parameters": _PARAMETERS,
                                            },
                                        },
                                    },
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "200": {
                        "description": "outputs",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["model_name", "outputs"],
                                    "properties": {
                                        "model_name": {"type": "string"},
                                        "model_version": {"type": "string"},
                                        "id": {"type": "string"},
                                        "parameters": _PARAMETERS,
                                        "outputs": {"type": "array", "items": _tensor(False)},
                                    },
                                }
                            }
                        },
                    },
                    **{status: _ERROR for status in ("400", "404", "413", "503", "504")},
                },
            }
        },
        "/v2/repository/index": {
            "post": {
                "summary": "Model repository index",
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"ready": {"type": "boolean"}},
                            }
                        }
                    }
                },
                "responses": {
                    "200": {
                        "description": "models",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "required": ["name", "state"],
                                        "properties": {
                                            "name": {"type": "string"},
                                            "version": {"type": "string"},
                                            "state": {"type": "string"},
                                            "reason": {"type": "string"},
                                        },
                                    },
                                }
                            }
                        },
                    },
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
    "components": {
        "responses": {
            "Error": {
                "description": "what was wrong",
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "required": ["error"],
                            "properties": {"error": {"type": "string"}},
                        }
                    }
                },
            }
        }
    },
}
