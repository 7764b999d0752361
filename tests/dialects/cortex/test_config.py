"""cortex.yaml parsing without a server: both layouts, the endpoint rule, and startup errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from inferd.core.errors import TargetError
from inferd.dialects.cortex import onnx
from inferd.dialects.cortex.config import is_cortex_config, load_config


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cortex.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_v08_layout_with_deployment(tmp_path: Path) -> None:
    path = config(
        tmp_path,
        """
        - kind: deployment
          name: iris
        - kind: api
          name: a
          model: m.onnx
          request_handler: h.py
          tf_serving_key: ignored
        - kind: api
          name: b
          model: export/
          tf_serving_key: serving_default
        """,
    )
    a, b = load_config(path)
    assert (a.endpoint, a.format, a.model, a.handler) == (
        "/iris/a",
        "onnx",
        tmp_path / "m.onnx",
        tmp_path / "h.py",
    )
    assert (a.metadata, a.signature_key) == ({}, None)
    assert (b.endpoint, b.format, b.signature_key) == ("/iris/b", "tensorflow", "serving_default")


def test_v10_layout(tmp_path: Path) -> None:
    path = config(
        tmp_path,
        """
        - kind: api
          name: a
          onnx: {model: m.onnx, python_path: src, metadata: {k: 1}}
        - kind: api
          name: b
          endpoint: /custom
          predictor: {path: p.py}
        """,
    )
    a, b = load_config(path)
    assert (a.endpoint, a.python_path, a.metadata) == ("/a", tmp_path / "src", {"k": 1})
    assert (b.endpoint, b.format, b.model, b.handler_name) == ("/custom", "predictor", None, "p.py")


@pytest.mark.parametrize(
    ("text", "uri"),
    [
        ("- kind: api\n  name: a\n  model: s3://b/m.onnx\n", "s3://b/m.onnx"),
        ("- kind: api\n  name: a\n  tensorflow: {model: GS://b/export}\n", "GS://b/export"),
        (
            "- kind: api\n  name: a\n  predictor: {path: p.py, model: 'http://host/m.onnx'}\n",
            "http://host/m.onnx",
        ),
    ],
)
def test_a_model_in_object_storage_is_kept_as_written_for_startup_to_fetch(
    tmp_path: Path, text: str, uri: str
) -> None:
    path = tmp_path / "cortex.yaml"
    path.write_text(text)
    (api,) = load_config(path)
    assert (api.model_uri, api.model) == (uri, None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- kind: api\n  name: a\n", "api a: model: key is required"),
        ("- kind: api\n  name: a\n  onnx: {}\n", "api a: onnx: model: key is required"),
        ("- kind: api\n  name: a\n  model: m.onnx\n  onnx: {model: m.onnx}\n", "api a: model: key is not"),
        ("- kind: api\n  name: a\n  tensorflow: {model: m}\n  onnx: {model: m.onnx}\n", "api a: only one of"),
        (
            "- kind: api\n  name: a\n  model: m.onnx\n- kind: api\n  name: a\n  model: m.onnx\n",
            "more than one",
        ),
        ("- kind: job\n", "resource kind 'job' is not supported"),
        ("kind: api\n", "expected a list of resources"),
    ],
)
def test_invalid_configs(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(TargetError) as caught:
        load_config(config(tmp_path, text))
    assert message in caught.value.message


def test_file_uris_are_paths(tmp_path: Path) -> None:
    """``file://`` is a plain path: relative to the project dir, or absolute with a third slash."""
    elsewhere = tmp_path / "elsewhere" / "m.onnx"
    path = config(
        tmp_path,
        f"""
        - kind: api
          name: a
          model: file://models/m.onnx
        - kind: api
          name: b
          onnx: {{model: "file://{elsewhere}"}}
        """,
    )
    a, b = load_config(path)
    assert (a.model, a.format) == (tmp_path / "models" / "m.onnx", "onnx")
    assert b.model == elsewhere


def test_detection_needs_cortex_resources(tmp_path: Path) -> None:
    assert is_cortex_config(config(tmp_path, "- kind: api\n  name: a\n"))
    assert not is_cortex_config(config(tmp_path, "apiVersion: v1\nkind: Pod\n"))


def test_missing_onnxruntime_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onnx.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(TargetError, match=r"pip install 'inferd\[onnx\]'"):
        onnx.require_onnxruntime()
