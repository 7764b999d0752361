"""cortex.yaml parsing without a server: both layouts, the endpoint rule, and startup errors."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(TargetError, match=r"pip install 'inferd\[onnx\]'"):
        onnx.require_onnxruntime()


def test_class_layouts_and_their_endpoints(tmp_path: Path) -> None:
    """0.12 under its deployment, 0.13-0.18 ``endpoint``, 0.20+ ``networking.endpoint`` written without
    its slash, and ``models.paths`` as named models."""
    path = config(
        tmp_path,
        """
        - kind: deployment
          name: d
        - kind: api
          name: v12
          predictor: {type: python, path: p.py, config: {k: 1}}
        - name: v17
          endpoint: /seventeen
          predictor: {type: onnx, path: p.py, model: m.onnx}
        - name: v25
          kind: RealtimeAPI
          networking: {endpoint: my/api}
          predictor:
            type: tensorflow
            path: p.py
            models:
              paths: [{name: a, model_path: a/}, {name: b, model_path: s3://bucket/b/}]
              signature_key: serve
        """,
    )
    v12, v17, v25 = load_config(path)
    assert (v12.endpoint, v12.format, v12.predictor_type, v12.metadata) == (
        "/d/v12",
        "class",
        "python",
        {"k": 1},
    )
    assert (v17.endpoint, v17.model) == ("/seventeen", (tmp_path / "m.onnx").resolve())
    assert v25.endpoint == "/my/api"
    assert [(m.name, m.model_uri, m.signature_key) for m in v25.named_models] == [
        ("a", None, "serve"),
        ("b", "s3://bucket/b/", "serve"),
    ]
    assert is_cortex_config(path)


_KEYS = st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}", fullmatch=True)
_VALUES = st.from_regex(r"[A-Za-z0-9_./:@-]{0,12}", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(_KEYS, _VALUES, max_size=5),
    st.sampled_from(["", "export "]),
    st.sampled_from(["", "'", '"']),
)
def test_dot_env_reads_as_python_dotenv_does(values: dict[str, str], export: str, quote: str) -> None:
    import tempfile

    from dotenv import dotenv_values

    from inferd.dialects.cortex.config_classes import dot_env

    with tempfile.TemporaryDirectory() as folder:
        lines = [
            "# a comment",
            *(f"{export}{key}={quote}{value}{quote}" for key, value in values.items()),
            "",
        ]
        (Path(folder) / ".env").write_text("\n".join(lines))
        assert dot_env(Path(folder)) == dotenv_values(Path(folder) / ".env") == values
