"""Writing a model into a repository's folder, as tritonclient's ``load_model(config=..., files=...)``
asks: the folder is prepared beside the others under a name no scan reads, then renamed into place,
so a poll never sees it half written and a failed write leaves nothing behind."""

from __future__ import annotations

import errno
import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from inferd.core.errors import InvalidInput
from inferd.core.names import name_problem
from inferd.dialects.repository import triton_config
from inferd.dialects.repository.files import SETTINGS_FILE, FolderProblem, from_mlserver, is_mlserver
from inferd.dialects.repository.versions import version_folders
from inferd.storage.confine import outside_problem

#: Prefix of the folders a write prepares (and of the old folder it replaces): scans skip them.
PREPARING = "_writing-"
#: The most characters of the model's name in the name of the folder a write prepares.
PREPARING_NAME = 64
#: The longest file or folder name, in bytes (Linux's and macOS's NAME_MAX).
NAME_MAX = 255
#: The longest path of a file in a model folder, in bytes: well below PATH_MAX (4096), which also
#: counts the repository's own path.
MAX_PATH = 1024
#: What writing a folder may fail with that is the sent layout's fault, not the server's: refused
#: as 400 should `check_layout` have let one through (another file system's shorter limits).
REFUSED_LAYOUTS = frozenset({errno.ENAMETOOLONG, errno.EEXIST, errno.ENOTDIR, errno.EISDIR, errno.EILSEQ})


def write_model(
    root: Path,
    name: str,
    config: Mapping[str, Any] | None,
    files: Mapping[str, bytes],
    max_files: int,
    max_size: int,
    allowed: Sequence[str] = (),
) -> None:
    """Make ``root/name`` hold ``files`` (tritonclient's relative paths, ``file:`` prefix allowed)
    and ``config`` as its ``inferd.yaml``. With no files, the folder's files stay and only its
    settings are replaced. Bad names, paths and sizes, and a target leaving the folder, are
    InvalidInput, naming the model."""
    problem = name_problem(name)
    if problem is not None:
        raise InvalidInput(problem)
    checked = checked_files(name, files, max_files, max_size)
    settings = settings_text(name, config) if config is not None else None
    check_layout(name, [*checked, *([SETTINGS_FILE] if settings is not None else [])])
    target = root / name
    # the name shortened: with the prefix and suffix, a name of 255 characters is too long for a folder
    preparing = root / f"{PREPARING}{name[:PREPARING_NAME]}-{uuid.uuid4().hex[:8]}"
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
            _confined(name, config, preparing, allowed)
        _swap(preparing, target)
    except OSError as exc:
        if exc.errno not in REFUSED_LAYOUTS:
            raise
        where = Path(exc.filename).relative_to(preparing) if _under(exc.filename, preparing) else "its folder"
        raise InvalidInput(
            f"model '{name}': cannot write {where} into the model's folder: {os.strerror(exc.errno)}"
        ) from None
    finally:
        shutil.rmtree(preparing, ignore_errors=True)


def check_layout(name: str, paths: list[str]) -> None:
    """Refuse, naming the path, files a folder cannot hold: a path part longer than a file name may
    be (`NAME_MAX` bytes), a path too long as a whole, and a file where another path needs a folder
    (``a`` and ``a/b``), so a write fails before anything is written, not halfway with an OSError."""
    files = set(paths)
    for path in paths:
        parts = path.split("/")
        long = next((part for part in parts if len(os.fsencode(part)) > NAME_MAX), None)
        if long is not None:
            raise InvalidInput(
                f"model '{name}': file path {_short(path)!r} has a part of {len(os.fsencode(long))} bytes; "
                f"a file or folder name may have at most {NAME_MAX}"
            )
        if len(os.fsencode(path)) > MAX_PATH:
            raise InvalidInput(
                f"model '{name}': file path {_short(path)!r} is {len(os.fsencode(path))} bytes long; "
                f"at most {MAX_PATH} are taken"
            )
        for end in range(1, len(parts)):
            folder = "/".join(parts[:end])
            if folder in files:
                raise InvalidInput(
                    f"model '{name}': {_short(folder)!r} is sent as a file and as the folder of "
                    f"{_short(path)!r}; a path cannot be both"
                )


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
    """``config`` (inferd's keys, MLServer's model settings or Triton's model configuration) as the
    text of an ``inferd.yaml``."""
    if not isinstance(config, Mapping) or not all(isinstance(key, str) for key in config):
        raise InvalidInput(f"model '{name}': its config must be a mapping of settings")
    try:
        if triton_config.is_triton(config):
            values = triton_config.inferd_settings(config)
        else:
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


def _confined(name: str, config: Mapping[str, Any] | None, folder: Path, allowed: Sequence[str]) -> None:
    """Refuse a config whose target leaves the model's folder (`outside_problem`) before the folder
    is put in place: from each version folder it holds, else from the folder itself, where a scan
    resolves it. The load checks again, for version folders' own settings files."""
    values = from_mlserver(config) if config is not None and is_mlserver(config) else dict(config or {})
    target = values.get("target")
    if not isinstance(target, str) or not target:
        return
    for code in list(version_folders(folder).values()) or [folder]:
        problem = outside_problem(target, code, allowed, "the model's folder", home=folder)
        if problem is not None:
            raise InvalidInput(f"model '{name}': {problem}")


def _under(filename: object, folder: Path) -> bool:
    return isinstance(filename, str) and Path(filename).is_relative_to(folder)


def _short(path: str) -> str:
    """A path as a message shows it: a long one cut in its middle."""
    return path if len(path) <= 80 else f"{path[:40]}...{path[-30:]}"
