"""The pieces of a repository in one process, on real folders: the version policy, the checks and
atomicity of a write, and a scan's problems (each naming the model and its folder)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from inferd.core.errors import InvalidInput, ModelNotFound
from inferd.dialects.repository.settings import RepositorySettings
from inferd.dialects.repository.sources import FolderSource, source_of
from inferd.dialects.repository.versions import PolicyError, VersionPolicy, parse_policy
from inferd.dialects.repository.writing import relative_path
from tests.dialects.repository.conftest import mlserver_settings, native, write


@pytest.mark.parametrize(
    ("value", "served"),
    [
        (None, [5]),
        ({"latest": 2}, [3, 5]),
        ({"latest": {"num_versions": 3}}, [2, 3, 5]),
        ("all", [1, 2, 3, 5]),
        ({"specific": [1, 3, 4]}, [1, 3]),
        ({"specific": {"versions": ["2"]}}, [2]),
    ],
)
def test_a_version_policy_chooses_the_versions_served(value: object, served: list[int]) -> None:
    assert parse_policy(value).select([3, 1, 5, 2]) == served


@pytest.mark.parametrize(
    "value", [{"latest": 0}, {"latest": "two"}, {"specific": []}, "some", {"a": 1, "b": 2}]
)
def test_a_policy_that_is_none_says_what_is_expected(value: object) -> None:
    with pytest.raises(PolicyError, match=re.escape("expected 'all', {latest: N}")):
        parse_policy(value)


def test_the_default_policy_is_tritons_latest_one() -> None:
    assert parse_policy(None) == VersionPolicy(latest=1)


@pytest.mark.parametrize(
    "key", ["/etc/passwd", "../x.py", "a/../../x", "a//b", "./a", "", "a\0b", "file:", "a\\b"]
)
def test_a_file_path_leaving_the_model_folder_is_refused(key: str) -> None:
    with pytest.raises(InvalidInput, match="model 'm': file path"):
        relative_path("m", key)


def test_tritonclients_file_prefix_is_dropped() -> None:
    assert relative_path("m", "file:1/model.py") == "1/model.py"


def source(root: Path, **settings: object) -> FolderSource:
    root.mkdir(exist_ok=True)
    made = source_of(str(root), RepositorySettings(data_dir=root.parent / "data", **settings))  # type: ignore[arg-type]
    assert isinstance(made, FolderSource)
    return made


def test_a_write_puts_files_and_config_in_place_and_leaves_nothing_else(tmp_path: Path) -> None:
    repository = source(tmp_path / "models")
    repository.write("m", {"max_batch_size": 4}, {"file:1/model.py": native(2.0).encode()})
    assert sorted(path.name for path in (tmp_path / "models").iterdir()) == ["m"]
    assert yaml.safe_load((tmp_path / "models" / "m" / "inferd.yaml").read_text()) == {"max_batch_size": 4}
    scan = repository.scan_model("m")
    assert [(served.name, served.version) for served in scan.models] == [("m", "1")]


def test_a_write_of_a_config_alone_keeps_the_files(tmp_path: Path) -> None:
    repository = source(tmp_path / "models")
    repository.write("m", None, {"model.py": native(2.0).encode(), "inferd.yaml": b"max_batch_size: 2\n"})
    repository.write(
        "m", {"name": "m", "implementation": "model.py:Scaler", "parameters": {"version": "7"}}, {}
    )
    folder = tmp_path / "models" / "m"
    assert (folder / "model.py").is_file()
    assert yaml.safe_load((folder / "inferd.yaml").read_text()) == {
        "name": "m",
        "target": "model.py:Scaler",
        "model_version": "7",
    }
    assert [served.version for served in repository.scan_model("m").models] == ["7"]


def test_a_write_replaces_the_whole_folder(tmp_path: Path) -> None:
    repository = source(tmp_path / "models")
    repository.write("m", None, {"model.py": native(2.0).encode(), "old.txt": b"x"})
    repository.write("m", None, {"model.py": native(3.0).encode()})
    assert sorted(path.name for path in (tmp_path / "models" / "m").iterdir()) == ["model.py"]


@pytest.mark.parametrize(
    ("name", "files", "settings", "problem"),
    [
        ("../m", {"model.py": b""}, {}, "cannot be used in a URL path"),
        ("m", {f"f{n}.py": b"" for n in range(3)}, {"max_upload_files": 2}, "3 files sent, at most 2"),
        ("m", {"model.py": b"x" * 11}, {"max_upload_size": 10}, "11 bytes of files sent, at most 10"),
        ("m", {"../model.py": b""}, {}, "is not a relative path"),
    ],
)
def test_a_bad_write_is_refused_and_writes_nothing(
    tmp_path: Path, name: str, files: dict[str, bytes], settings: dict[str, int], problem: str
) -> None:
    repository = source(tmp_path / "models", **settings)
    with pytest.raises(InvalidInput, match=problem):
        repository.write(name, None, files)
    assert list((tmp_path / "models").iterdir()) == []


def test_an_mlserver_runtime_in_a_written_config_is_refused(tmp_path: Path) -> None:
    repository = source(tmp_path / "models")
    with pytest.raises(
        InvalidInput, match=re.escape("'mlserver_huggingface.HuggingFaceRuntime' is an MLServer runtime")
    ):
        repository.write("m", {"implementation": "mlserver_huggingface.HuggingFaceRuntime"}, {})


def test_a_repository_in_object_storage_is_not_written() -> None:
    made = source_of("s3://bucket/models/", RepositorySettings())
    with pytest.raises(InvalidInput, match=r"s3://bucket/models/: .* only read"):
        made.write("m", None, {"model.py": b""})


def test_an_unknown_model_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFound, match="model 'nope' is not in the model repository"):
        source(tmp_path / "models").scan_model("nope")


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        ({"inferd.yaml": "a: [b"}, "inferd.yaml is not readable YAML"),
        (
            {"inferd.yaml": "colour: red\n", "model.py": native(1.0)},
            "unknown settings ['colour'] for a native",
        ),
        (
            {"inferd.yaml": "service_type: ROUTER\n", "model.py": native(1.0)},
            "unknown settings ['service_type']",
        ),
        ({"model-settings.json": "{"}, "model-settings.json is not readable JSON"),
        (
            {"model.py": "import not_a_module_anywhere\n"},
            "no module named 'not_a_module_anywhere'|ModuleNotFound",
        ),
        ({"notes.txt": "hello"}, "no inferd.yaml or model-settings.json, and what it holds is not servable"),
        ({"inferd.yaml": "versions: {latest: 0}\n", "1/model.py": native(1.0)}, "versions: latest 0"),
        ({"inferd.yaml": "max_batch_size: 0\n", "model.py": native(1.0)}, "max_batch_size"),
        ({"inferd.yaml": "target: missing.py\n"}, "missing.py"),
    ],
)
def test_a_broken_folder_is_a_problem_naming_model_and_folder(
    tmp_path: Path, files: dict[str, str], problem: str
) -> None:
    root = tmp_path / "models"
    write(root / "broken", files)
    write(root / "fine", {"model.py": native(2.0)})
    scan = source(root).scan()
    assert [served.name for served in scan.models] == ["fine"]
    assert list(scan.problems) == ["broken"]
    assert f"model 'broken' in {root / 'broken'}: " in scan.problems["broken"]
    assert any(part in scan.problems["broken"] for part in problem.split("|")), scan.problems["broken"]


def test_two_folders_giving_one_name_are_a_problem_naming_both(tmp_path: Path) -> None:
    root = tmp_path / "models"
    write(root / "a", {"model.py": native(1.0), "inferd.yaml": "name: same\n"})
    write(root / "b", {"model.py": native(2.0), "model-settings.json": mlserver_settings(name="same")})
    scan = source(root).scan()
    assert scan.models == ()
    assert str(root / "a") in scan.problems["same"] and str(root / "b") in scan.problems["same"]


def test_server_settings_in_a_models_file_are_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "models"
    write(root / "m", {"model.py": native(1.0), "inferd.yaml": "port: 9999\nworkers: 3\n"})
    scan = source(root).scan()
    assert [served.name for served in scan.models] == ["m"]
    assert "['port', 'workers'] are the server's settings" in caplog.text


def test_an_unchanged_folder_keeps_its_fingerprint_and_a_changed_one_gets_another(tmp_path: Path) -> None:
    root = tmp_path / "models"
    write(
        root / "m", {"inferd.yaml": "versions: all\n", "1/model.py": native(1.0), "2/model.py": native(2.0)}
    )
    repository = source(root)
    before = {served.version: served.fingerprint for served in repository.scan().models}
    assert {served.version: served.fingerprint for served in repository.scan().models} == before
    write(root / "m", {"2/model.py": native(5.0) + "\n# changed\n"})
    after = {served.version: served.fingerprint for served in repository.scan().models}
    assert after["1"] == before["1"] and after["2"] != before["2"]
