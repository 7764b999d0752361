"""The dialect's pure parts: payload rules, parameters, class names, metadata and metric validation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from inferd.core.errors import TargetError
from inferd.dialects.seldon import metadata, metrics
from inferd.dialects.seldon.loader import class_target
from inferd.dialects.seldon.unit import Unit
from inferd.protocols.seldon import payload
from inferd.protocols.seldon.errors import SeldonError
from inferd.protocols.seldon.parameters import parse_parameters


@pytest.mark.parametrize(
    ("result", "kind", "expected"),
    [
        ({"a": 1}, "ndarray", {"jsonData": {"a": 1}}),
        (b"\x00\x01", "ndarray", {"binData": "AAE="}),
        ("text", "tensor", {"strData": "text"}),
        (
            np.array([1, 2, 3]),
            "strData",
            {"data": {"names": [], "tensor": {"shape": [3], "values": [1, 2, 3]}}},
        ),
        (
            np.array([[1.5]]),
            "tensor",
            {"data": {"names": ["t:0"], "tensor": {"shape": [1, 1], "values": [1.5]}}},
        ),
        (np.array([["a"]]), "tensor", {"data": {"names": ["t:0"], "ndarray": [["a"]]}}),
        (
            [[1, 2]],
            "jsonData",
            {"data": {"names": ["t:0", "t:1"], "tensor": {"shape": [1, 2], "values": [1, 2]}}},
        ),
        ([[1, "x"], [2]], "ndarray", {"data": {"names": [], "ndarray": [[1, "x"], [2]]}}),
    ],
)
def test_encode_follows_the_payload_rules(result: Any, kind: str, expected: dict[str, Any]) -> None:
    assert payload.encode(result, kind, None) == expected


@pytest.mark.parametrize("result", [3.5, (1, 2), None, 7])
def test_encode_refuses_what_is_not_a_payload(result: Any) -> None:
    with pytest.raises(SeldonError, match="Unknown data type returned as payload"):
        payload.encode(result, "ndarray", None)


def test_class_names_come_from_a_method_or_attribute() -> None:
    array = np.zeros((1, 2))
    assert payload.names_of(array, lambda: ["a", "b"]) == ["a", "b"]
    assert payload.names_of(array, ("c", "d")) == ["c", "d"]
    assert payload.names_of(np.zeros(2), lambda: ["unused"]) == []


def test_decode_order_and_kinds() -> None:
    decoded = payload.decode({"jsonData": 1, "strData": "x", "meta": {"puid": "p"}})
    assert (decoded.kind, decoded.features, decoded.meta) == ("jsonData", 1, {"puid": "p"})
    assert payload.decode({"binData": "YQ=="}).features == b"a"
    tensor = payload.decode({"data": {"names": ["a"], "tensor": {"shape": [2, 1], "values": [1, 2]}}})
    assert tensor.kind == "tensor" and tensor.names == ["a"] and tensor.features.shape == (2, 1)


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("MyModel", "MyModel:MyModel"),
        ("pkg.mod.Cls", "pkg.mod:Cls"),
        ("mod:Cls", "mod:Cls"),
        ("f.py:Cls", "f.py:Cls"),
    ],
)
def test_class_target_forms(target: str, expected: str) -> None:
    assert class_target(target) == expected


def test_parameters_are_typed() -> None:
    declared = (
        '[{"name": "i", "value": "3", "type": "INT"}, {"name": "d", "value": "0.25", "type": "DOUBLE"},'
        ' {"name": "s", "value": "x", "type": "STRING"}, {"name": "b", "value": "no", "type": "bool"}]'
    )
    assert parse_parameters(declared) == {"i": 3, "d": 0.25, "s": "x", "b": False}
    assert parse_parameters(None) == {} and parse_parameters("[]") == {}
    with pytest.raises(TargetError, match="needs name, value and type"):
        parse_parameters('[{"name": "i", "value": "3"}]')


@pytest.mark.parametrize(
    "document",
    [
        {"inputs": [{"messagetype": "tensor", "schema": {"names": ["a"], "shape": [1]}}]},
        {"inputs": [{"messagetype": "jsonData", "schema": {"type": "object"}}]},
        {"outputs": [{"messagetype": "strData"}, {"messagetype": "binData"}]},
        {"outputs": [{"messagetype": "custom", "schema": {"any": "thing"}}]},
        {"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}]},
        {"custom": {"k": "v"}, "versions": ["a", "b"], "platform": "p"},
    ],
)
def test_valid_metadata(document: dict[str, Any]) -> None:
    built = metadata.build(lambda: document, {})
    assert built == {**metadata.defaults({}), **document}


@pytest.mark.parametrize(
    "document",
    [
        {"unknown": 1},
        {"name": 3},
        {"versions": "v1"},
        {"custom": {"k": 1}},
        {"inputs": [{"name": "x", "datatype": "FLOAT", "shape": [1]}]},
        {"inputs": [{"name": "x", "datatype": "FP32"}]},
        {"inputs": [{"messagetype": "tensor", "schema": {"shape": ["1"]}}]},
        {"inputs": [{"messagetype": "strData", "schema": {}}]},
        {"inputs": "not a list"},
    ],
)
def test_invalid_metadata(document: dict[str, Any]) -> None:
    with pytest.raises(SeldonError, match="Model metadata unavailable"):
        metadata.build(lambda: document, {})


def test_metadata_defaults_from_the_image() -> None:
    built = metadata.build(None, {"PREDICTIVE_UNIT_IMAGE": "registry:5000/org/model:2.1"})
    assert (built["name"], built["versions"]) == ("registry:5000/org/model", ["2.1"])


@pytest.mark.parametrize(
    "bad",
    [
        {"key": "k", "value": 1},
        [{"key": "k", "type": "SUMMARY", "value": 1}],
        [{"key": "k", "type": "GAUGE", "value": "1"}],
        [{"type": "GAUGE", "value": 1}],
        [{"key": "k", "type": "GAUGE", "value": True}],
    ],
)
def test_bad_metrics(bad: Any) -> None:
    with pytest.raises(SeldonError) as raised:
        metrics.validate(bad)
    assert (raised.value.status, raised.value.reason) == (500, "MICROSERVICE_BAD_METRIC")


def test_deployment_labels() -> None:
    labels = metrics.deployment_labels(
        {
            "PREDICTIVE_UNIT_IMAGE": "org/img:3",
            "PREDICTOR_LABELS": '{"version": "v2"}',
            "PREDICTIVE_UNIT_ID": "u",
        }
    )
    assert labels["image_name"] == labels["model_image"] == "org/img"
    assert labels["image_version"] == labels["model_version"] == "3"
    assert labels["predictor_version"] == "v2" and labels["model_name"] == "u"
    assert labels["deployment_name"] == "NOT_IMPLEMENTED"


def test_unit_defaults_are_seldon_cores() -> None:
    labels = metrics.deployment_labels({})
    assert set(labels.values()) == {"NOT_IMPLEMENTED"}
    untagged = metrics.deployment_labels({"PREDICTIVE_UNIT_IMAGE": "model", "PREDICTIVE_UNIT_ID": ""})
    assert (untagged["model_image"], untagged["model_version"], untagged["model_name"]) == ("", "model", "")
    assert metadata.build(None, {"PREDICTIVE_UNIT_IMAGE": "model"})["versions"] == ["model"]
    assert Unit.from_environment({}) == Unit(None, "NOT_IMPLEMENTED:NOT_IMPLEMENTED")
    assert (Unit(None).request_path(), Unit(None).routing_key) == ({}, "0")
    assert Unit("NOT_IMPLEMENTED").request_path() == {}
    assert Unit("u", "img:1").request_path() == {"u": "img:1"} and Unit("u").routing_key == "u"
