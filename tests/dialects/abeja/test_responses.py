"""The answer rules of both handler styles, on the functions themselves."""

from __future__ import annotations

import http

import numpy as np
import pytest

from inferd.dialects.abeja.datatypes import Response
from inferd.dialects.abeja.exceptions import InvalidInput, ModelError
from inferd.dialects.abeja.responses import (
    HandlerResultError,
    error_answer,
    from_return_value,
    from_yields,
    serialize,
    unsupported_content_type,
)


def test_defaults_of_a_returned_dict() -> None:
    answer = from_return_value({"content": "hi"})
    assert (answer.status, answer.body, answer.content_type, answer.headers) == (200, b"hi", "text/plain", ())


def test_http_status_and_metadata() -> None:
    answer = from_return_value({"status_code": http.HTTPStatus.ACCEPTED, "metadata": {"Retry-After": 5}})
    assert answer.status == 202
    assert answer.headers == (("Retry-After", "5"),)


@pytest.mark.parametrize(
    "value",
    ["text", {"status_code": 1000}, {"status_code": "200"}, {"metadata": ["x"]}, {"content_type": 5}],
)
def test_what_cannot_be_an_answer(value: object) -> None:
    with pytest.raises(HandlerResultError):
        from_return_value(value)


def test_items_mix_raw_bytes_and_lines() -> None:
    assert serialize(["a", {"b": 1}, b"raw", "c"], "text/plain") == b'a\n{"b": 1}raw\nc'


def test_a_list_that_is_not_key_pairs_stays_a_list() -> None:
    assert serialize([[[1, 2, 3], [4, 5, 6]]], "application/json") == b"[[1, 2, 3], [4, 5, 6]]"


def test_csv_with_charset_and_numpy_values() -> None:
    body = serialize([{"n": np.int64(1)}, {"n": 2}], "text/csv; charset=utf-8")
    assert body == b"n\r\n1\r\n2\r\n"


def test_csv_rows_must_be_dicts() -> None:
    with pytest.raises(HandlerResultError):
        serialize([5], "text/csv")


def test_a_content_that_is_not_iterable_fails() -> None:
    with pytest.raises(TypeError):
        serialize(5, "text/plain")


def test_yielded_numpy_values_are_json() -> None:
    answer = from_yields([{"p": np.float32(0.5), "a": np.arange(2, dtype=np.uint8), 3: "int key"}])
    assert answer.body == b'{"p":0.5,"a":[0,1],"3":"int key"}'


def test_a_yielded_response_defaults_to_json_and_joins_items() -> None:
    answer = from_yields([Response(["a", b"b", {"c": 1}], metadata=[("X-A", "1")])])
    assert (answer.body, answer.content_type, answer.headers) == (
        b'ab{"c":1}',
        "application/json",
        (("X-A", "1"),),
    )


def test_yielding_what_is_not_json_fails() -> None:
    with pytest.raises(HandlerResultError):
        from_yields([object()])


def test_error_bodies() -> None:
    assert (
        error_answer(InvalidInput('say "why"')).body
        == b'{"error":"bad_request","error_description":"say \\"why\\""}'
    )
    assert error_answer(ModelError("x")).status == 500
    # the proxy formats, it does not escape
    assert unsupported_content_type('a"b').body == b'{"status":"Content-Type: [a"b] is not supported"}'
