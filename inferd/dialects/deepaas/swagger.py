"""``<base>/swagger.json``: the Swagger 2.0 document of DEEPaaS's V2 API (spec §10), built with apispec from
the models' marshmallow argument fields.

Upstream's document (aiohttp-apispec) contradicted its own server in places; this one describes what inferd
answers: training status ``done`` (not ``completed``), the training list as a bare array, ``predictions`` as
any JSON value, and no error bodies that are never sent. It must also stay valid Swagger 2.0 whatever fields
a model declares, so parameters are trimmed to what a Swagger 2.0 parameter may hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin, resolver
from apispec.ext.marshmallow.openapi import OpenAPIConverter
from marshmallow import INCLUDE, Schema, fields, validate

TITLE = "DEEP as a Service API endpoint"
DESCRIPTION = (
    "A REST API to serve machine learning and deep learning models, compatible with "
    "[DEEPaaS](https://github.com/indigo-dc/DEEPaaS) V2, served by **inferd**.\n\n"
    "Each model has its metadata at `/v2/models/<name>/`, predictions at `/v2/models/<name>/predict/` and "
    "training jobs at `/v2/models/<name>/train/`."
)
EXTERNAL_DOCS = {"description": "DEEPaaS documentation", "url": "https://deepaas.readthedocs.org"}
ACCEPT = "accept"
ANY_TYPE = "*/*"
JSON = "application/json"
#: What predict and train read: form fields (files need multipart, so it comes first) and JSON bodies.
CONSUMES = ["multipart/form-data", "application/x-www-form-urlencoded", JSON]
#: webargs ``location`` → Swagger ``in``. Cookies and path arguments have no Swagger 2.0 form on these
#: routes, so such arguments are left out of the document.
LOCATIONS = {
    "query": "query",
    "querystring": "query",
    "form": "formData",
    "files": "formData",  # read as form by inferd (upstream always failed)
    "headers": "header",
    "json": "body",
}
#: What a Swagger 2.0 non-body parameter may hold besides ``in``, ``name`` and ``required``.
PARAMETER_KEYS = frozenset(
    {
        "description",
        "type",
        "format",
        "allowEmptyValue",
        "items",
        "collectionFormat",
        "default",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "enum",
        "multipleOf",
    }
)
ITEMS_KEYS = PARAMETER_KEYS - {"description", "allowEmptyValue"}
SIMPLE_TYPES = frozenset({"string", "number", "integer", "boolean", "array"})
TRAINING_STATES = ("running", "done", "error", "cancelled")


@dataclass(frozen=True)
class ModelDoc:
    """What the document shows of one served model."""

    name: str
    predict_args: Mapping[str, fields.Field]
    train_args: Mapping[str, fields.Field]
    #: The declared ``accept`` choices without ``*/*``; None when predict has no ``accept`` argument or
    #: one without choices (then it is an ordinary string argument).
    accept: Sequence[str] | None
    #: The predict response schema class: the model's Schema subclass, or the class made from its dict.
    schema: type[Schema] | None


# The JSON documents of spec §3, as marshmallow schemas for apispec.


class LocationSchema(Schema):
    rel = fields.Str(required=True, metadata={"example": "self"})
    href = fields.Str(required=True, metadata={"example": "/v2/"})
    type = fields.Str(required=True, metadata={"example": JSON})


class VersionSchema(Schema):
    version = fields.Str(required=True, metadata={"example": "stable"})
    id = fields.Str(required=True, metadata={"example": "v2"})
    links = fields.List(fields.Nested(LocationSchema), required=True)


class VersionsSchema(Schema):
    versions = fields.List(fields.Nested(VersionSchema), required=True)
    links = fields.List(fields.Nested(LocationSchema), required=True)


class ModelLinkSchema(Schema):
    rel = fields.Str(required=True, metadata={"example": "self"})
    href = fields.Str(required=True, metadata={"example": "/v2/models/deepaas-test"})
    type = fields.Str()


class ModelMetaSchema(Schema):
    """Metadata is not validated: the model's own keys pass through."""

    class Meta:
        unknown = INCLUDE

    id = fields.Str(required=True, metadata={"description": "Model identifier"})
    name = fields.Str(required=True, metadata={"description": "Model name"})
    description = fields.Str(required=True, metadata={"description": "Model description"})
    license = fields.Str(metadata={"description": "Model license"})
    author = fields.Str(metadata={"description": "Model author"})
    version = fields.Str(metadata={"description": "Model version"})
    url = fields.Str(metadata={"description": "Model's url"})
    links = fields.List(fields.Nested(ModelLinkSchema))


class ModelListSchema(Schema):
    models = fields.List(fields.Nested(ModelMetaSchema), required=True)


class TrainingResultSchema(Schema):
    output = fields.Raw(metadata={"description": "What train() returned (any JSON value)"})
    finish_date = fields.Str(metadata={"example": "2026-11-22 12:57:41.453385"})
    duration = fields.Str(metadata={"example": "0:00:02.003352"})


class TrainingSchema(Schema):
    date = fields.Str(required=True, metadata={"example": "2026-11-22 12:57:39.450033"})
    args = fields.Dict(required=True, metadata={"description": "The parsed training arguments"})
    uuid = fields.Str(required=True, metadata={"example": "f76c9feaaad04cf59cc337e3cda149ef"})
    status = fields.Str(required=True, validate=validate.OneOf(TRAINING_STATES))
    result = fields.Nested(TrainingResultSchema, metadata={"description": "Only when done"})
    message = fields.Str(metadata={"description": "The error, only when the training failed"})


class PredictionSchema(Schema):
    status = fields.Str(required=True, metadata={"example": "OK"})
    predictions = fields.Raw(
        required=True, metadata={"description": "What predict() returned (any JSON value)"}
    )


#: The argument errors of a 422: field → messages (a dict by index or key for List and Dict fields).
ARGUMENT_ERRORS = {
    "type": "object",
    "additionalProperties": {"description": "The field's error messages"},
    "example": {"parameter": ["Not a valid integer."]},
}
UUID_PARAMETER = {
    "in": "path",
    "name": "uuid",
    "required": True,
    "type": "string",
    "description": "The training's uuid (32 hex digits)",
}


class _Names:
    """Definition names, never twice the same: apispec only warns on a clash and a shared name would
    describe two schemas (several models, or nested dict schemas all named ``Generated``)."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def claim(self, wanted: str) -> str:
        name, count = wanted, 1
        while name in self.taken:
            name, count = f"{wanted}{count}", count + 1
        self.taken.add(name)
        return name

    def resolve(self, schema: type[Schema]) -> str:
        """apispec's own naming (the class name less ``Schema``), made unique."""
        return self.claim(resolver(schema))


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/definitions/{name}"}


def document(
    models: Sequence[ModelDoc], *, version: str, base_path: str = "", predict: bool = True, train: bool = True
) -> dict[str, Any]:
    """The Swagger 2.0 document for ``models``; disabled predict / train routes are left out."""
    names = _Names()
    plugin = MarshmallowPlugin(schema_name_resolver=names.resolve)
    spec = APISpec(
        title=TITLE,
        version=version,
        openapi_version="2.0",
        plugins=[plugin],
        info={"description": DESCRIPTION},
        externalDocs=EXTERNAL_DOCS,
    )
    for name, schema in (
        ("Location", LocationSchema),
        ("Version", VersionSchema),
        ("Versions", VersionsSchema),
        ("ModelMeta", ModelMetaSchema),
        ("ModelList", ModelListSchema),
        ("TrainingResult", TrainingResultSchema),
        ("Training", TrainingSchema),
    ):
        spec.components.schema(names.claim(name), schema=schema)
    spec.components.schema(names.claim("TrainingList"), {"type": "array", "items": ref("Training")})
    spec.components.schema(names.claim("ArgumentErrors"), ARGUMENT_ERRORS)
    assert plugin.converter is not None
    base = base_path.rstrip("/")
    _versions_paths(spec, base)
    for model in models:
        prefix = f"{base}/v2/models/{model.name}"
        spec.path(f"{prefix}/", operations={"get": _metadata_operation(model.name)})
        if predict:
            # registered on first use, under a unique name, even when nested in another model's schema
            response: type[Schema] = model.schema or PredictionSchema
            answer: dict[str, Any] = plugin.converter.resolve_nested_schema(response)  # type: ignore[no-untyped-call]
            operation = _predict_operation(plugin.converter, model, answer)
            spec.path(f"{prefix}/predict/", operations={"post": operation})
        if train:
            operations = _train_operations(plugin.converter, model)
            spec.path(f"{prefix}/train/", operations={"get": operations["list"], "post": operations["start"]})
            spec.path(
                f"{prefix}/train/{{uuid}}",
                parameters=[UUID_PARAMETER],
                operations={"get": operations["get"], "delete": operations["delete"]},
            )
    return spec.to_dict()


def _versions_paths(spec: APISpec, base: str) -> None:
    spec.path(
        base or "/",
        operations={"get": _get("versions", "get_versions", "API versions", ref("Versions"), "The versions")},
    )
    spec.path(
        f"{base}/v2/",
        operations={"get": _get("versions", "get_version_v2", "The V2 API", ref("Version"), "The V2 API")},
    )
    debug = _get("debug", "get_debug", "Server logs (not kept by inferd)", {"type": "string"}, "Never sent")
    debug["description"] = "DEEPaaS's `--debug-endpoint` log buffer; inferd keeps none and answers 204."
    debug["produces"] = []  # a 204 has no body, so no content type
    debug["responses"] = {"204": {"description": "No debug buffer"}}
    spec.path(f"{base}/v2/debug/", operations={"get": debug})
    models = _get("models", "list_models", "The loaded models", ref("ModelList"), "Every model's metadata")
    spec.path(f"{base}/v2/models/", operations={"get": models})


def _get(tag: str, operation_id: str, summary: str, schema: dict[str, Any], answer: str) -> dict[str, Any]:
    return {
        "tags": [tag],
        "operationId": operation_id,
        "summary": summary,
        "produces": [JSON],
        "responses": {"200": {"description": answer, "schema": schema}},
    }


def _metadata_operation(name: str) -> dict[str, Any]:
    return _get("models", f"{name}.get_metadata", f"Metadata of model {name}", ref("ModelMeta"), "Metadata")


def _predict_operation(
    converter: OpenAPIConverter, model: ModelDoc, answer: dict[str, Any]
) -> dict[str, Any]:
    produces = [*model.accept, ANY_TYPE] if model.accept is not None else [JSON]
    operation = {
        "tags": ["predict"],
        "operationId": f"{model.name}.predict",
        "summary": f"Make a prediction with model {model.name}",
        "consumes": CONSUMES,
        "produces": produces,
        "parameters": parameters(converter, model.predict_args, model.accept),
        "responses": {
            "200": {
                "description": "The prediction: this JSON document for `application/json` or `*/*`, "
                "else the model's raw answer in the accepted media type",
                "schema": answer,
            },
            **_failures("predict"),
        },
    }
    return operation


def _train_operations(converter: OpenAPIConverter, model: ModelDoc) -> dict[str, dict[str, Any]]:
    name = model.name
    training = {"description": "The training", "schema": ref("Training")}
    missing = {"description": "No such training"}
    disabled = _failures("train")["402"]
    return {
        "start": {
            "tags": ["train"],
            "operationId": f"{name}.train",
            "summary": f"Start a training of model {name}",
            "description": "The training runs in the background: the answer is its `running` record.",
            "consumes": CONSUMES,
            "produces": [JSON],
            "parameters": parameters(converter, model.train_args),
            "responses": {"200": training, **_failures("train")},
        },
        "list": {
            "tags": ["train"],
            "operationId": f"{name}.list_trainings",
            "summary": f"Every training of model {name}",
            "produces": [JSON],
            "responses": {
                "200": {"description": "The trainings, oldest first", "schema": ref("TrainingList")},
                "402": disabled,
            },
        },
        "get": {
            "tags": ["train"],
            "operationId": f"{name}.get_training",
            "summary": f"One training of model {name}",
            "produces": [JSON],
            "responses": {"200": training, "402": disabled, "404": missing},
        },
        "delete": {
            "tags": ["train"],
            "operationId": f"{name}.cancel_training",
            "summary": f"Cancel a training of model {name} (if still running) and forget it",
            "produces": [JSON],
            "responses": {
                "200": {"description": "The training as it was when deleted", "schema": ref("Training")},
                "402": disabled,
                "404": missing,
            },
        },
    }


def _failures(endpoint: str) -> dict[str, Any]:
    return {
        "400": {"description": "The body is not what its content type says"},
        "402": {"description": f"The {endpoint} endpoint is disabled on this server"},
        "422": {"description": "Invalid arguments: field → error messages", "schema": ref("ArgumentErrors")},
        "500": {"description": f"The model failed to {endpoint}, or its answer is not valid"},
        "501": {"description": f"The model does not implement {endpoint}"},
    }


def parameters(
    converter: OpenAPIConverter, args: Mapping[str, fields.Field], accept: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """The Swagger parameters of a predict or train arguments dict, in declaration order. Arguments
    located in the JSON body are gathered into one ``body`` parameter, as Swagger 2.0 allows only one,
    and it cannot stand next to form parameters: there the form wins (files are only sent that way)."""
    found: list[dict[str, Any]] = []
    body: dict[str, fields.Field] = {}
    for name, field in args.items():
        where = LOCATIONS.get(str(field.metadata.get("location", "query")))
        if name == ACCEPT and accept is not None:
            found.append(accept_parameter(converter, field, accept))
        elif where == "body":
            body[name] = field
        elif where is not None:
            found.append(parameter(converter, name, field, where))
    if body and not any(param["in"] == "formData" for param in found):
        schema: dict[str, Any] = converter.fields2jsonschema(body)  # type: ignore[no-untyped-call]
        found.append({"in": "body", "name": "body", "required": "required" in schema, "schema": schema})
    return found


def parameter(converter: OpenAPIConverter, name: str, field: fields.Field, where: str) -> dict[str, Any]:
    """One non-body parameter: apispec's JSON schema of the field (metadata such as ``type: file``,
    ``description`` or ``enum`` passes through), trimmed to what Swagger 2.0 takes in a parameter."""
    found: dict[str, Any] = {"in": where, "name": field.data_key or name}
    found.update(_simple(converter.field2property(field), PARAMETER_KEYS, SIMPLE_TYPES | {"file"}))
    if found.get("type") == "file" and where != "formData":
        found["type"] = "string"
    if found["type"] == "array":
        found["collectionFormat"] = "multi"
    found["required"] = field.required
    return found


def accept_parameter(
    converter: OpenAPIConverter, field: fields.Field, accept: Sequence[str]
) -> dict[str, Any]:
    """``accept`` is read as a header; it also takes ``*/*`` and defaults to its first choice (§6.1)."""
    found = parameter(converter, ACCEPT, field, "header")
    found.update(type="string", enum=[*accept, ANY_TYPE], default=accept[0])
    found.pop("format", None)
    return found


def _simple(prop: Mapping[str, Any], keys: frozenset[str], types: frozenset[str]) -> dict[str, Any]:
    """``prop`` as a Swagger 2.0 parameter or items object: no ``$ref`` or object types (a query
    string only holds strings), array items always typed, no null default."""
    found = {key: value for key, value in prop.items() if key in keys or key.startswith("x-")}
    if found.get("type") not in types:
        found["type"] = "string"
        found.pop("format", None)
    if found.get("default", 0) is None:
        del found["default"]
    if found["type"] == "array":
        items = prop.get("items")
        found["items"] = _simple(items if isinstance(items, Mapping) else {}, ITEMS_KEYS, SIMPLE_TYPES)
    else:
        found.pop("items", None)
    if found["type"] == "file":
        found.pop("enum", None)
        found.pop("default", None)
    return found
