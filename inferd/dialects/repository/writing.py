"""Writing a model into a repository's folder, as tritonclient's ``load_model(config=..., files=...)``
asks: the folder is prepared beside the others under a name no scan reads, then renamed into place,
so a poll never sees it half written and a failed write leaves nothing behind."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from inferd.core.errors import InvalidInput
from inferd.core.names import name_problem
from inferd.dialects.repository.files import SETTINGS_FILE, FolderProblem, from_mlserver, is_mlserver

#: Prefix of the folders a write prepares (and of the old folder it replaces): scans skip them.
PREPARING = "_writing-"


def write_model(
    root: Path,
    name: str,
    config: Mapping[str, Any] | None,
    files: Mapping[str, bytes],
    max_files: int,
    max_size: int,
) -> None:
    """Make ``root/name`` hold ``files`` (tritonclient's relative paths, ``file:`` prefix allowed)
    and ``config`` as its ``inferd.yaml``. With no files, the folder's files stay and only its
    settings are replaced. Bad names, paths and sizes are InvalidInput, naming the model."""
    problem = name_problem(name)
    if problem is not None:
        raise InvalidInput(problem)
    checked = checked_files(name, files, max_files, max_size)
    settings = settings_text(name, config) if config is not None else None
    target = root / name
    preparing = root / f"{PREPARING}{name}-{uuid.uuid4().hex[:8]}"
    try:
        if not checked and target.is_dir():
            shutil.copytree(target, preparing, ignore=shutil.ignore_patterns("__pycache__"))
        preparing.mkdir(exist_ok=True)
        for relative, content in checked.items():
            path = preparing / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        if settings is not None:
            (preparing / SETTINGS_FILE).write_text(settings)
        _swap(preparing, target)
    finally:
        shutil.rmtree(preparing, ignore_errors=True)


def checked_files(name: str, files: Mapping[str, bytes], max_files: int, max_size: int) -> dict[str, bytes]:
    """``files`` by safe relative paths; a path leaving the folder, and too many or too large files,
    are refused."""
    if len(files) > max_files:
        raise InvalidInput(f"model '{name}': {len(files)} files sent, at most {max_files} are taken")
    total = sum(len(content) for content in files.values())
    if total > max_size:
        raise InvalidInput(f"model '{name}': {total} bytes of files sent, at most {max_size} are taken")
    return {relative_path(name, key): content for key, content in files.items()}


def relative_path(name: str, key: str) -> str:
    """A file's path in the model folder as tritonclient names it (``file:1/model.py``)."""
    text = key.removeprefix("file:")
    path = PurePosixPath(text)
    bad = (
        not text
        or "\0" in text
        or "\\" in text
        or path.is_absolute()
        or any(part in ("", ".", "..") for part in text.split("/"))
    )
    if bad:
        raise InvalidInput(
            f"model '{name}': file path {key!r} is not a relative path inside the model's folder "
            "(no leading '/', no '..' or '.' parts, no empty parts)"
        )
    return path.as_posix()


def settings_text(name: str, config: Mapping[str, Any]) -> str:
    """``config`` (inferd's keys, or MLServer's model settings) as the text of an ``inferd.yaml``."""
    if not isinstance(config, Mapping) or not all(isinstance(key, str) for key in config):
        raise InvalidInput(f"model '{name}': its config must be a mapping of settings")
    try:
        values = from_mlserver(config) if is_mlserver(config) else dict(config)
        text: str = yaml.safe_dump(values, sort_keys=True)
        return text
    except FolderProblem as exc:
        raise InvalidInput(f"model '{name}': {exc}") from None
    except yaml.YAMLError as exc:
        raise InvalidInput(f"model '{name}': its config cannot be written as YAML: {exc}") from None


def _swap(fresh: Path, target: Path) -> None:
    """Put ``fresh`` at ``target``; an old folder there is moved aside first, then removed."""
    if not target.exists():
        fresh.rename(target)
        return
    old = fresh.with_name(fresh.name + "-old")
    target.rename(old)
    try:
        fresh.rename(target)
    except OSError:
        old.rename(target)
        raise
    shutil.rmtree(old, ignore_errors=True)
