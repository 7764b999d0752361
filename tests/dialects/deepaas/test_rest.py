"""DEEPaaS's REST API over real HTTP: documents, paths and redirects, argument locations, uploads,
accept types, response schemas and errors."""

from __future__ import annotations

import http.client
import os
from pathlib import Path

import httpx
import pytest

from tests.servers import RunningServer

CLASSY = "/v2/models/classy"


def test_versions_and_v2_documents(demo: httpx.Client) -> None:
    response = demo.get("/")
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert response.json() == {
        "versions": [
            {
                "version": "stable",
                "id": "v2",
                "links": [{"rel": "self", "type": "application/json", "href": "/v2/"}],
            }
        ],
        "links": [
            {"rel": "help", "type": "text/html", "href": "/api"},
            {"rel": "describedby", "type": "application/json", "href": "/swagger.json"},
        ],
    }
    assert demo.get("/v2/").json() == response.json()["versions"][0]


def test_models_are_found_through_entry_points(demo: httpx.Client, demo_server: RunningServer) -> None:
    assert sorted(demo_server.models) == ["classy", "filer", "instance", "moduly", "schemed"]  # not broken
    assert "model 'broken' of 'deepaas.v2.model' failed to load" in demo_server.log
    models = {model["links"][0]["href"]: model for model in demo.get("/v2/models/").json()["models"]}
    assert list(models["/v2/models/classy"]) == ["id", "name", "links", "author", "version", "extra"]
    assert models["/v2/models/classy"]["name"] == "Classy model"
    assert models["/v2/models/classy"]["id"] == "classy"
    assert models["/v2/models/moduly"]["id"] == "moduly-id"
    assert demo.get("/v2/models/moduly/").json() == models["/v2/models/moduly"]


def test_paths_redirect_and_methods(demo: httpx.Client) -> None:
    redirect = demo.get("/v2/models")
    assert (redirect.status_code, redirect.headers["location"], redirect.text) == (
        308,
        "/v2/models/",
        "308: Permanent Redirect",
    )
    merged = raw_get(demo, "//v2//models/")  # httpx would clean the path itself
    assert (merged.status, merged.getheader("location")) == (308, "/v2/models/")
    posted = demo.post(f"{CLASSY}/predict?number=1")
    assert (posted.status_code, posted.headers["location"]) == (308, f"{CLASSY}/predict/?number=1")
    wrong = demo.post("/v2/models/")
    assert (wrong.status_code, wrong.text, wrong.headers["allow"]) == (405, "405: Method Not Allowed", "GET")
    assert demo.head("/v2/models/").status_code == 405
    assert demo.get(f"{CLASSY}/predict/").headers["allow"] == "POST"
    missing = demo.get("/v2/models/unknown/")
    assert (missing.status_code, missing.text) == (404, "404: Not Found")
    assert missing.headers["content-type"] == "text/plain; charset=utf-8"
    assert demo.get("/api/").status_code == 404
    assert demo.get("/v2/debug/").status_code == 204


def raw_get(client: httpx.Client, path: str) -> http.client.HTTPResponse:
    """GET ``path`` exactly as written."""
    connection = http.client.HTTPConnection(client.base_url.host, client.base_url.port, timeout=10)
    connection.request("GET", path)
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def predict(client: httpx.Client, **kwargs: object) -> httpx.Response:
    return client.post(f"{CLASSY}/predict/", **kwargs)  # type: ignore[arg-type]


def test_arguments_from_query_form_json_and_headers(demo: httpx.Client) -> None:
    query = predict(demo, params={"number": "3", "tags": ["a", "b"], "flag": "yes"}, headers={"Token": "t1"})
    assert query.status_code == 200, query.text
    body = query.json()
    assert body["status"] == "OK"
    args = body["predictions"]["args"]
    assert args == {
        "number": 3,
        "mode": "foo",
        "ratio": 0.5,
        "flag": True,
        "tags": ["a", "b"],
        "token": "t1",
        "accept": "*/*",  # httpx sends Accept: */*, which DEEPaaS adds to the choices
    }
    assert body["predictions"]["warmed"] == 1
    form = predict(demo, data={"number": "4", "mode": "bar", "note": "from the form"})
    assert form.json()["predictions"]["args"]["note"] == "from the form"
    assert form.json()["predictions"]["args"]["mode"] == "bar"
    json_body = predict(demo, json={"number": 5, "ratio": 9.9, "note": "ignored"})
    args = json_body.json()["predictions"]["args"]
    assert args["number"] == 5 and args["ratio"] == 0.5  # ratio is query only, note form only
    assert "note" not in args
    first = predict(demo, params={"number": "6"}, data={"number": "7"})
    assert first.json()["predictions"]["args"]["number"] == 6  # the query string comes first


def uploads(temp: Path) -> set[Path]:
    """The upload files in the server's temporary folder."""
    return set(temp.glob("inferd-upload-*"))


def test_uploaded_file_reaches_the_model_and_is_removed(demo: httpx.Client, demo_temp: Path) -> None:
    before = uploads(demo_temp)
    files = {"data": ("notes.txt", b"hello file", "application/x-foo")}
    response = predict(demo, data={"number": "1"}, files=files)
    assert response.status_code == 200, response.text
    predictions = response.json()["predictions"]
    uploaded = predictions["args"]["data"]
    assert (uploaded["name"], uploaded["content_type"], uploaded["original_filename"]) == (
        "data",
        "application/x-foo",
        "notes.txt",
    )
    assert uploaded["path_exists"] is True and predictions["content"] == "hello file"
    assert Path(uploaded["path"]).parent == demo_temp  # where the count below looks
    assert not os.path.exists(uploaded["path"])
    assert uploads(demo_temp) == before


def test_file_field_given_as_text_is_passed_as_text(demo: httpx.Client) -> None:
    response = predict(demo, files={"data": (None, "just text"), "number": (None, "2")})
    assert response.json()["predictions"]["args"]["data"] == "just text"


@pytest.mark.parametrize(
    ("kwargs", "messages"),
    [
        ({}, {"number": ["Missing data for required field."]}),
        ({"params": {"number": "x"}}, {"number": ["Not a valid integer."]}),
        ({"params": {"number": "1", "mode": "baz"}}, {"mode": ["Must be one of: foo, bar."]}),
        (
            {"params": {"number": "1"}, "headers": {"Accept": "image/gif"}},
            {"accept": ["Must be one of: application/json, text/plain, application/octet-stream."]},
        ),
        (
            {"params": {"number": "1"}, "headers": {"Accept": "application/json, text/plain"}},
            {"accept": ["Must be one of: application/json, text/plain, application/octet-stream."]},
        ),
    ],
)
def test_bad_arguments_are_422(demo: httpx.Client, kwargs: dict, messages: dict) -> None:
    response = predict(demo, **kwargs)
    assert response.status_code == 422
    assert response.json() == messages
    assert predict(demo, params={"number": "1"}).status_code == 200


def test_malformed_multipart_is_400_and_leaves_no_file(demo: httpx.Client, demo_temp: Path) -> None:
    body = b'--b\r\nContent-Disposition: form-data; name="data"; filename="x"\r\n\r\nunterminated'
    before = uploads(demo_temp)
    response = predict(demo, content=body, headers={"content-type": "multipart/form-data"})  # no boundary
    assert response.status_code == 400
    assert response.text.startswith("400: malformed form body")
    assert uploads(demo_temp) == before
    assert predict(demo, params={"number": "1"}).status_code == 200


def test_a_malformed_json_body_is_ignored_as_upstream(demo: httpx.Client) -> None:
    headers = {"content-type": "application/json"}
    assert predict(demo, params={"number": "2"}, content=b"nope", headers=headers).status_code == 200
    missing = predict(demo, content=b"nope", headers=headers)
    assert (missing.status_code, missing.json()) == (422, {"number": ["Missing data for required field."]})


def test_accept_picks_the_response_type(demo: httpx.Client) -> None:
    text = predict(demo, params={"number": "7"}, headers={"Accept": "text/plain"})
    assert (text.status_code, text.headers["content-type"], text.text) == (
        200,
        "text/plain; charset=utf-8",
        "number=7",
    )
    raw = predict(demo, params={"number": "65"}, headers={"Accept": "application/octet-stream"})
    assert raw.content == b"AAA" and raw.headers["content-type"] == "application/octet-stream"
    default = demo.post(f"{CLASSY}/predict/", params={"number": "1"}, headers={"Accept": ""})
    assert default.status_code in (200, 422)


def test_an_open_file_answer_is_an_attachment_and_cookies_are_read(demo: httpx.Client) -> None:
    response = demo.post("/v2/models/filer/predict/", headers={"Accept": "text/csv", "Cookie": "rows=3"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    assert response.headers["content-disposition"] == 'attachment; filename="data.csv"'
    assert response.text == "0,0\n1,1\n2,4\n"
    default = demo.post("/v2/models/filer/predict/", headers={"Accept": "text/csv"})
    assert default.text == "0,0\n1,1\n"
    json_answer = demo.post("/v2/models/filer/predict/")  # */*: a file is not JSON
    assert json_answer.status_code == 500


def test_model_errors(demo: httpx.Client) -> None:
    failed = predict(demo, params={"number": "13"})
    assert (failed.status_code, failed.text) == (
        500,
        "500 Internal Server Error\n\nServer got itself in trouble",
    )
    teapot = predict(demo, params={"number": "402"})
    assert (teapot.status_code, teapot.text) == (418, "418: I'm a teapot")
    assert predict(demo, params={"number": "1"}).status_code == 200


def test_response_schema_as_a_dict(demo: httpx.Client) -> None:
    good = demo.post("/v2/models/moduly/predict/", params={"numbers": ["1", "2", "3"]})
    assert good.json() == {"total": 6}  # a schema: no status wrapper
    bad = demo.post("/v2/models/moduly/predict/", params={"numbers": ["0"]})
    assert (bad.status_code, bad.text) == (500, "500: ERROR validating model response, check server logs.")
    unknown = demo.post("/v2/models/moduly/predict/", params={"numbers": ["1"]})
    assert unknown.status_code == 500


def test_response_schema_as_a_class_and_url_arguments(demo: httpx.Client) -> None:
    good = demo.post("/v2/models/schemed/predict/", params={"link": "https://example.org/cat"})
    assert good.json() == {"label": "cat", "score": 0.5}
    bad = demo.post("/v2/models/schemed/predict/", params={"link": "https://example.org/wrong"})
    assert (bad.status_code, bad.text) == (500, "500: ERROR validating model response, check server logs.")
    not_url = demo.post("/v2/models/schemed/predict/", params={"link": "not a url"})
    assert (not_url.status_code, not_url.json()) == (422, {"link": ["Not a valid URL."]})


def test_instance_entry_point(demo: httpx.Client) -> None:
    response = demo.post("/v2/models/instance/predict/", params={"number": "1"})
    assert response.json()["predictions"]["warmed"] == 1


def test_v2_named_inputs(demo: httpx.Client) -> None:
    body = {
        "inputs": [
            {"name": "number", "shape": [1], "datatype": "INT64", "data": [8]},
            {"name": "mode", "shape": [1], "datatype": "BYTES", "data": ["bar"]},
        ]
    }
    response = demo.post("/v2/models/classy/infer", json=body)
    assert response.status_code == 200, response.text
    import json

    document = json.loads(response.json()["outputs"][0]["data"][0])
    assert document["args"]["number"] == 8 and document["args"]["mode"] == "bar"
    bad = demo.post(
        "/v2/models/classy/infer",
        json={"inputs": [{"name": "mode", "shape": [1], "datatype": "BYTES", "data": ["x"]}]},
    )
    assert bad.status_code == 400
    assert "Missing data for required field" in bad.json()["error"]


def test_builtin_test_model(builtin: httpx.Client) -> None:
    missing = builtin.post("/v2/models/deepaas-test/predict/")
    assert missing.status_code == 422
    assert missing.json() == {
        "data": ["Missing data for required field."],
        "parameter": ["Missing data for required field."],
    }
    files = {"data": ("foo.txt", b"x", "text/plain"), "parameter": (None, "1")}
    answer = builtin.post("/v2/models/deepaas-test/predict/", files=files)
    assert answer.status_code == 200, answer.text
    assert answer.json()["labels"] == [{"label": "foo", "probability": 1.0}]
    png = builtin.post("/v2/models/deepaas-test/predict/", files=files, headers={"Accept": "image/png"})
    assert png.headers["content-type"] == "image/png" and png.content.startswith(b"\x89PNG\r\n\x1a\n")
    text = builtin.post("/v2/models/deepaas-test/predict/", files=files, headers={"Accept": "text/plain"})
    assert text.text.startswith("data:image/png;base64,")
    metadata = builtin.get("/v2/models/deepaas-test/").json()
    assert (metadata["id"], metadata["name"]) == ("0", "deepaas-test")
