"""schemathesis against live servers: every V2 route (its document at /v2/openapi.json) and every
DEEPaaS route (its Swagger 2.0 /swagger.json) answers generated requests, valid and not, without a
5xx and as its document says (status codes, content types, response schemas).

Left out: repository load/unload (unloading makes later cases 503 by design) and DEEPaaS training
(each case would start a training process)."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.dialects.deepaas.conftest import site_env
from tests.fuzz.conftest import API_EXAMPLES
from tests.servers import ROOT, RunningServer, serve, served

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


v2_server = served(
    lambda: serve(str(ROOT / "tests" / "models" / "native.py") + ":Echo", "--dialect", "native", "--no-grpc"),
    scope="module",
)


@pytest.fixture(scope="module")
def v2_schema(v2_server: RunningServer) -> Any:
    return schemathesis.openapi.from_url(v2_server.http_url + "/v2/openapi.json")


DEEPAAS = ("--dialect", "deepaas", "--model-name", "deepaas-test", "--no-grpc")

deepaas_server = served(
    lambda tmp_path_factory: serve(
        "", *DEEPAAS, "--data-dir", str(tmp_path_factory.mktemp("fuzz-deepaas")), env=site_env()
    ),
    scope="module",
)


@pytest.fixture(scope="module")
def deepaas_schema(deepaas_server: RunningServer) -> Any:
    schema = schemathesis.openapi.from_url(deepaas_server.http_url + "/swagger.json")
    schema.base_url = deepaas_server.http_url  # Swagger 2.0 names no host
    return schema


def fuzz(schema: Any, excluded: str, fix: Any = None) -> int:
    """Every operation of ``schema`` but ``excluded`` paths, each with the profile's examples; the
    number of cases sent. (schemathesis's own pytest plugin does not run under pytest 9.)"""
    sent = 0
    for result in schema.exclude(path_regex=excluded).get_all_operations():
        operation = result.ok()

        @settings(max_examples=API_EXAMPLES)
        @given(case=operation.as_strategy())
        def answer_as_documented(case: Any) -> None:
            nonlocal sent
            if fix is not None:
                fix(case)
            sent += 1
            case.call_and_validate(checks=CHECKS)

        answer_as_documented()
    print(f"schemathesis: {sent} cases sent")
    return sent


def served_model(case: Any) -> None:
    if "name" in (case.path_parameters or {}):
        case.path_parameters["name"] = "echo"  # the served model: random names only meet the 404


def test_v2_routes_answer_as_documented(v2_schema: Any) -> None:
    assert fuzz(v2_schema, "/repository/models/", served_model) > 0


def test_deepaas_routes_answer_as_documented(deepaas_schema: Any) -> None:
    assert fuzz(deepaas_schema, "/train") > 0


def test_the_v2_document_is_valid_openapi(v2_server: RunningServer) -> None:
    import httpx
    from openapi_spec_validator import validate

    document = httpx.get(v2_server.http_url + "/v2/openapi.json").json()
    validate(document)
    assert "/v2/models/{name}/infer" in document["paths"]
