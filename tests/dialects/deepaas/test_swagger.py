"""DEEPaaS's Swagger 2.0 document (spec §10) and its Swagger UI at ``/api``, checked in headless Chromium."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from marshmallow import Schema, fields, validate
from openapi_spec_validator import validate as validate_spec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, Router

from inferd.dialects.deepaas import ui
from inferd.dialects.deepaas.swagger import ModelDoc, document
from tests import browser
from tests.servers import serve_asgi

ACCEPT = ["application/json", "text/plain", "image/png"]


def declared_predict_args() -> dict[str, fields.Field]:
    """Predict arguments declared the webargs 5 way, as DEEPaaS models do (marshmallow 3 warns)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "data": fields.Field(
                required=True, location="form", type="file", description="Data file to perform inference on."
            ),
            "parameter": fields.Int(required=True, description="This is a parameter for prediction"),
            "mode": fields.Str(required=False, validate=validate.OneOf(["foo", "bar"]), missing="foo"),
            "style": fields.Str(required=False, missing="a", enum=["a", "b"], description="Old-style enum"),
            "nums": fields.List(fields.Int(), description="Repeated numbers"),
            "accept": fields.Str(
                location="headers", validate=validate.OneOf(ACCEPT), description="Answer type"
            ),
        }


def declared_train_args() -> dict[str, fields.Field]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "sleep": fields.Int(required=True, validate=validate.OneOf([1, 2])),
            "weights": fields.Field(type="file", location="files"),
            "token": fields.Str(location="headers"),
            "flag": fields.Bool(missing=False),
        }


class LabelSchema(Schema):
    label = fields.Str()
    probability = fields.Float()


class ResultSchema(Schema):
    labels = fields.List(fields.Nested(LabelSchema))


def demo(
    name: str = "demo", schema: type[Schema] | None = None, accept: list[str] | None = ACCEPT
) -> ModelDoc:
    return ModelDoc(name, declared_predict_args(), declared_train_args(), accept, schema)


def operation(doc: dict[str, Any], path: str, method: str = "post") -> dict[str, Any]:
    found: dict[str, Any] = doc["paths"][path][method]
    return found


def by_name(parameters: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {parameter["name"]: parameter for parameter in parameters}


def test_document_head_and_paths() -> None:
    doc = document([demo()], version="9.9.9")
    assert doc["swagger"] == "2.0"
    assert doc["info"]["title"] == "DEEP as a Service API endpoint"
    assert doc["info"]["version"] == "9.9.9"
    assert "DEEPaaS" in doc["info"]["description"]
    assert doc["externalDocs"]["url"] == "https://deepaas.readthedocs.org"
    assert "basePath" not in doc
    assert {path: sorted(item) for path, item in doc["paths"].items()} == {
        "/": ["get"],
        "/v2/": ["get"],
        "/v2/debug/": ["get"],
        "/v2/models/": ["get"],
        "/v2/models/demo/": ["get"],
        "/v2/models/demo/predict/": ["post"],
        "/v2/models/demo/train/": ["get", "post"],
        "/v2/models/demo/train/{uuid}": ["delete", "get", "parameters"],
    }
    validate_spec(doc)


def test_predict_parameters() -> None:
    predict = operation(document([demo()], version="1"), "/v2/models/demo/predict/")
    assert [p["name"] for p in predict["parameters"]] == [
        "data",
        "parameter",
        "mode",
        "style",
        "nums",
        "accept",
    ]
    found = by_name(predict["parameters"])
    assert found["data"] == {
        "in": "formData",
        "name": "data",
        "type": "file",
        "description": "Data file to perform inference on.",
        "required": True,
    }
    assert found["parameter"] == {
        "in": "query",
        "name": "parameter",
        "type": "integer",
        "description": "This is a parameter for prediction",
        "required": True,
    }
    assert found["mode"] == {
        "in": "query",
        "name": "mode",
        "type": "string",
        "enum": ["foo", "bar"],
        "default": "foo",
        "required": False,
    }
    assert found["style"] == {
        "in": "query",
        "name": "style",
        "type": "string",
        "enum": ["a", "b"],
        "default": "a",
        "description": "Old-style enum",
        "required": False,
    }
    assert found["nums"] == {
        "in": "query",
        "name": "nums",
        "type": "array",
        "items": {"type": "integer"},
        "collectionFormat": "multi",
        "description": "Repeated numbers",
        "required": False,
    }
    assert found["accept"] == {
        "in": "header",
        "name": "accept",
        "type": "string",
        "enum": [*ACCEPT, "*/*"],
        "default": "application/json",
        "description": "Answer type",
        "required": False,
    }
    assert predict["produces"] == [*ACCEPT, "*/*"]
    assert predict["consumes"][0] == "multipart/form-data"  # files need it, Swagger UI picks the first
    assert set(predict["consumes"]) == {
        "multipart/form-data",
        "application/x-www-form-urlencoded",
        "application/json",
    }
    assert predict["responses"]["422"]["schema"] == {"$ref": "#/definitions/ArgumentErrors"}
    assert {"200", "402", "422", "500", "501"} <= set(predict["responses"])


def test_train_parameters_and_operations() -> None:
    doc = document([demo()], version="1")
    train = operation(doc, "/v2/models/demo/train/")
    found = by_name(train["parameters"])
    assert found["sleep"] == {
        "in": "query",
        "name": "sleep",
        "type": "integer",
        "enum": [1, 2],
        "required": True,
    }
    assert found["weights"] == {"in": "formData", "name": "weights", "type": "file", "required": False}
    assert found["token"] == {"in": "header", "name": "token", "type": "string", "required": False}
    assert found["flag"] == {
        "in": "query",
        "name": "flag",
        "type": "boolean",
        "default": False,
        "required": False,
    }
    assert train["responses"]["200"]["schema"] == {"$ref": "#/definitions/Training"}
    listing = operation(doc, "/v2/models/demo/train/", "get")
    assert listing["responses"]["200"]["schema"] == {"$ref": "#/definitions/TrainingList"}
    item = doc["paths"]["/v2/models/demo/train/{uuid}"]
    assert item["parameters"] == [
        {
            "in": "path",
            "name": "uuid",
            "required": True,
            "type": "string",
            "description": "The training's uuid (32 hex digits)",
        }
    ]
    assert item["get"]["responses"]["404"] and item["delete"]["responses"]["404"]


def test_definitions_describe_what_the_server_sends() -> None:
    definitions = document([demo()], version="1")["definitions"]
    assert {"Versions", "Version", "Location", "ModelMeta", "Training", "TrainingList", "Prediction"} <= set(
        definitions
    )
    assert definitions["Location"]["required"] == ["href", "rel", "type"]
    assert definitions["ModelMeta"]["required"] == ["description", "id", "name"]
    assert list(definitions["ModelMeta"]["properties"]) == [
        *("id", "name", "description", "license", "author", "version", "url", "links"),
    ]
    assert definitions["ModelMeta"]["additionalProperties"] is True  # the model's own keys pass through
    training = definitions["Training"]["properties"]
    assert training["status"]["enum"] == ["running", "done", "error", "cancelled"]
    assert set(training) == {"date", "args", "uuid", "status", "result", "message"}
    assert set(definitions["TrainingResult"]["properties"]) == {"output", "finish_date", "duration"}
    assert "type" not in definitions["TrainingResult"]["properties"]["output"]  # any JSON value
    assert definitions["TrainingList"] == {"type": "array", "items": {"$ref": "#/definitions/Training"}}
    assert "type" not in definitions["Prediction"]["properties"]["predictions"]  # any JSON value
    assert definitions["Prediction"]["properties"]["status"]["type"] == "string"
    predict = operation(document([demo()], version="1"), "/v2/models/demo/predict/")
    assert predict["responses"]["200"]["schema"] == {"$ref": "#/definitions/Prediction"}


def test_model_schema_replaces_prediction() -> None:
    doc = document([demo(schema=ResultSchema)], version="1")
    predict = operation(doc, "/v2/models/demo/predict/")
    assert predict["responses"]["200"]["schema"] == {"$ref": "#/definitions/Result"}
    assert "Prediction" not in doc["definitions"]
    assert doc["definitions"]["Result"]["properties"]["labels"]["items"] == {"$ref": "#/definitions/Label"}
    validate_spec(doc)


def test_dict_schema_is_model_prediction_response() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        declared = {"labels": fields.List(fields.Nested({"label": fields.Str()})), "data": fields.Str()}
    schema = Schema.from_dict(declared, name="ModelPredictionResponse")
    doc = document([demo(schema=schema)], version="1")
    predict = operation(doc, "/v2/models/demo/predict/")
    assert predict["responses"]["200"]["schema"] == {"$ref": "#/definitions/ModelPredictionResponse"}
    labels = doc["definitions"]["ModelPredictionResponse"]["properties"]["labels"]
    assert labels["items"] == {"$ref": "#/definitions/Generated"}
    validate_spec(doc)


def test_several_models_get_distinct_definitions() -> None:
    class Training(Schema):  # the same name as a definition of the API
        loss = fields.Float()

    models = [demo("a", ResultSchema), demo("b", ResultSchema), demo("c", Training), demo("d"), demo("e")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # apispec warns when a name or a schema is registered twice
        doc = document(models, version="1")
    refs = [operation(doc, f"/v2/models/{name}/predict/")["responses"]["200"]["schema"] for name in "abcde"]
    assert refs == [
        {"$ref": "#/definitions/Result"},
        {"$ref": "#/definitions/Result"},
        {"$ref": "#/definitions/Training1"},
        {"$ref": "#/definitions/Prediction"},
        {"$ref": "#/definitions/Prediction"},
    ]
    assert doc["definitions"]["Training1"]["properties"] == {"loss": {"type": "number"}}
    validate_spec(doc)


def test_base_path_prefixes_every_path() -> None:
    doc = document([demo()], version="1", base_path="/custom")
    assert sorted(doc["paths"]) == [
        "/custom",  # the versions document: no trailing slash under a base path
        "/custom/v2/",
        "/custom/v2/debug/",
        "/custom/v2/models/",
        "/custom/v2/models/demo/",
        "/custom/v2/models/demo/predict/",
        "/custom/v2/models/demo/train/",
        "/custom/v2/models/demo/train/{uuid}",
    ]
    assert "basePath" not in doc
    validate_spec(doc)


@pytest.mark.parametrize(("predict", "train"), [(False, True), (True, False), (False, False)])
def test_disabled_endpoints_leave_the_document(predict: bool, train: bool) -> None:
    doc = document([demo()], version="1", predict=predict, train=train)
    assert ("/v2/models/demo/predict/" in doc["paths"]) is predict
    assert ("/v2/models/demo/train/" in doc["paths"]) is train
    assert ("/v2/models/demo/train/{uuid}" in doc["paths"]) is train
    assert "/v2/models/demo/" in doc["paths"]
    validate_spec(doc)


def test_no_models_and_no_accept() -> None:
    assert not [
        path for path in document([], version="1")["paths"] if "/models/" in path.removesuffix("models/")
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        free = fields.Str(location="headers")  # no choices: an ordinary argument, no */* (spec policy)
    doc = document([ModelDoc("m", {"accept": free}, {}, None, None)], version="1")
    predict = operation(doc, "/v2/models/m/predict/")
    assert predict["produces"] == ["application/json"]
    assert predict["parameters"] == [{"in": "header", "name": "accept", "type": "string", "required": False}]
    validate_spec(doc)


def test_json_arguments_and_odd_fields_stay_valid_swagger() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        args = {
            "config": fields.Dict(location="json", required=True),
            "items": fields.List(fields.Nested(LabelSchema), location="json"),
            "extra": fields.Dict(),  # an object in a query string: documented as a string
            "nested": fields.List(fields.Nested(LabelSchema)),
            "maybe": fields.Int(missing=None, allow_none=True),
            "when": fields.DateTime(),
            "where": fields.Str(location="cookies"),  # no Swagger 2.0 form on these routes: left out
            "header_file": fields.Field(type="file", location="headers"),
        }
        upload = fields.Field(metadata={"type": "file", "location": "form"})
    doc = document([ModelDoc("odd", args, {}, None, None)], version="1")
    found = by_name(operation(doc, "/v2/models/odd/predict/")["parameters"])
    assert list(found) == ["extra", "nested", "maybe", "when", "header_file", "body"]
    body = found["body"]
    assert body["in"] == "body" and body["required"] is True
    assert body["schema"]["required"] == ["config"]
    assert set(body["schema"]["properties"]) == {"config", "items"}
    assert found["extra"]["type"] == "string"
    assert found["nested"]["items"] == {"type": "string"}
    assert "default" not in found["maybe"]
    assert found["when"] == {
        "in": "query",
        "name": "when",
        "type": "string",
        "format": "date-time",
        "required": False,
    }
    assert found["header_file"]["type"] == "string"
    validate_spec(doc)
    # Swagger 2.0 forbids a body next to form parameters: the form (how files are sent) wins
    with_file = {**args, "upload": upload}
    doc = document([ModelDoc("odd", with_file, {}, None, None)], version="1")
    kinds = {p["in"] for p in operation(doc, "/v2/models/odd/predict/")["parameters"]}
    assert "body" not in kinds and "formData" in kinds
    validate_spec(doc)


# Swagger UI


def asgi_client(base: str = "") -> httpx.AsyncClient:
    """The UI routes alone. In the dialect a catch-all fallback route keeps Starlette from redirecting
    ``/api/`` to ``/api``; here redirect_slashes=False does."""
    transport = httpx.ASGITransport(app=Router(ui.routes(base), redirect_slashes=False))
    return httpx.AsyncClient(transport=transport, base_url="http://docs")


@pytest.mark.parametrize("base", ["", "/custom"])
async def test_ui_routes(base: str) -> None:
    async with asgi_client(base) as client:
        await check_ui_routes(client, base)


async def check_ui_routes(client: httpx.AsyncClient, base: str) -> None:
    page = await client.get(f"{base}/api")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    for asset in ("swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js"):
        assert f'"{base}/static/swagger/{asset}"' in page.text
    assert f'url: "{base}/swagger.json"' in page.text
    assert "validatorUrl: null" in page.text  # Swagger UI would send the document to validator.swagger.io
    redirect = await client.get(f"{base}/ui")
    assert (redirect.status_code, redirect.headers["location"], redirect.text) == (
        302,
        f"{base}/api",
        "302: Found",
    )
    assert redirect.headers["content-type"] == "text/plain; charset=utf-8"
    assert (await client.get(f"{base}/api/")).status_code == 404
    refused = await client.post(f"{base}/api")
    assert (refused.status_code, refused.headers["allow"], refused.text) == (
        405,
        "GET",
        "405: Method Not Allowed",
    )
    assert (await client.head(f"{base}/api")).status_code == 405
    script = await client.get(f"{base}/static/swagger/swagger-ui-bundle.js")
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    assert len(script.content) > 100_000
    assert (
        (await client.get(f"{base}/static/swagger/swagger-ui.css"))
        .headers["content-type"]
        .startswith("text/css")
    )
    assert (await client.head(f"{base}/static/swagger/swagger-ui.css")).status_code == 200


async def test_assets_outside_the_bundle_are_not_served() -> None:
    async with asgi_client() as client:
        for path in (
            "missing.js",
            "%2E%2E/__init__.py",
            "..%2F__init__.py",
            "",
            "%2Fetc%2Fpasswd",
            "a%00b",
            "x" * 5000,
        ):
            assert (await client.get(f"/static/swagger/{path}")).status_code == 404, path


def test_page_escapes_the_base_path() -> None:
    page = ui.page('/a"b</script>')
    assert (
        '</script>";' not in page and 'href="/a&quot;b&lt;/script&gt;/static/swagger/swagger-ui.css"' in page
    )


# Swagger UI in a real browser


@pytest.fixture
def served_docs() -> Iterator[str]:
    """Swagger UI and a document for model ``demo`` under ``/custom``, served by uvicorn on 127.0.0.1."""
    base = "/custom"
    doc = document([demo(schema=ResultSchema)], version="1.2.3", base_path=base)

    async def swagger_json(request: Request) -> Response:
        return JSONResponse(doc)

    app = Starlette(routes=[*ui.routes(base), Route(f"{base}/swagger.json", swagger_json)])
    with serve_asgi(app) as url:
        yield f"{url}{base}"


def test_swagger_ui_renders_the_models_operations(served_docs: str) -> None:
    # the deep link opens the predict operation, so its parameters are rendered too
    dom = browser.dump_dom(f"{served_docs}/api#/predict/demo.predict")
    assert "DEEP as a Service API endpoint" in dom
    assert 'class="opblock opblock-post is-open"' in dom
    for path in ("/custom/v2/models/demo/predict/", "/custom/v2/models/demo/train/", "/custom/v2/models/"):
        assert f'data-path="{path}"' in dom
    assert dom.count('class="opblock opblock-') == 10  # every operation of the document
    for name in ("data", "parameter", "mode", "nums", "accept"):
        assert f'class="parameter__name{" required" if name in ("data", "parameter") else ""}">{name}' in dom
    assert '<input type="file"' in dom
    assert '<option value="*/*">*/*</option>' in dom
    assert "errors-wrapper" not in dom  # Swagger UI found nothing wrong in the document
    shot = browser.screenshot(f"{served_docs}/api", "deepaas-swagger-ui.png")
    assert shot.stat().st_size > 10_000
