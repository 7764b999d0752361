"""Where a run reads and writes: its inputs (local files and folders, or storage URIs fetched through
the model cache) and its output (a folder, or a storage prefix its answers are uploaded to), checked
when the run is submitted and expanded into files when it starts; and what a trigger's input folder
or storage prefix holds now.

Local paths are absolute: the control process does not share its caller's working directory (the CLI
makes them absolute before sending them)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from inferd.core.errors import InvalidInput, PayloadTooLarge
from inferd.storage.backends import BACKENDS
from inferd.storage.cache import ModelCache
from inferd.storage.errors import StorageError, StorageNotFound
from inferd.storage.locations import is_remote, local_path, scheme
from inferd.storage.remote import Remote
from inferd.storage.upload import check_prefix

#: Entries in a run's list of inputs, and files once its folders are expanded.
MAX_INPUTS = 1000
MAX_FILES = 10_000
#: Bytes of local input a run may read (its folders summed).
MAX_INPUT_BYTES = 10 * 1024**3
MAX_PATH = 4096
#: Names a trigger leaves alone: hidden files and files still being written by common tools.
_PARTIAL_SUFFIXES = (".tmp", ".part", ".partial", ".crdownload", "~")


def check_inputs(inputs: Iterable[str]) -> list[str]:
    """The inputs as given when each is usable: a local file or folder that exists (InvalidInput
    naming the first that does not), or a URI of a storage scheme inferd reads (fetched when the run
    starts). At most `MAX_INPUTS` of them, `MAX_FILES` files and `MAX_INPUT_BYTES` locally."""
    found = list(inputs)
    if not found:
        raise InvalidInput("a run needs one or more inputs")
    if len(found) > MAX_INPUTS:
        raise InvalidInput(f"a run takes at most {MAX_INPUTS} inputs, not {len(found)}; name folders instead")
    local: list[Path] = []
    for item in found:
        _check_text("input", item)
        if is_remote(item):
            _check_scheme("input", item)
            continue
        path = _absolute("input", item)
        if not path.exists():
            raise InvalidInput(f"input {item!r} does not exist")
        local.append(path)
    count, size = 0, 0
    for file in _files(local):
        count, size = count + 1, size + file.stat().st_size
        if count > MAX_FILES:
            raise InvalidInput(f"the inputs hold more than {MAX_FILES} files; split the run")
        if size > MAX_INPUT_BYTES:
            raise PayloadTooLarge(f"the inputs hold more than {MAX_INPUT_BYTES} bytes; split the run")
    return found


def check_output(output: str) -> str:
    """Where the answers go, as the run records it: an absolute local folder that is not a file
    (created when the run starts), or a storage prefix (``s3://bucket/out/``, the '/' added) or an
    http(s) location (each answer PUT under it) the answers are uploaded under once written; nothing
    is sent to the store before the run starts."""
    _check_text("output", output)
    if is_remote(output):
        _check_scheme("output", output)
        try:
            return check_prefix(output)
        except StorageError as exc:
            raise InvalidInput(f"output {output!r}: {exc.problem}") from None
    path = _absolute("output", output)
    if path.exists() and not path.is_dir():
        raise InvalidInput(f"output {output!r} is a file, not a folder")
    return output


def check_watched(input: str) -> str:
    """A trigger's input: an existing local folder, or a storage prefix (``s3://bucket/in/``)."""
    _check_text("input", input)
    if is_remote(input):
        _check_scheme("input", input)
        if scheme(input) in ("http", "https"):
            raise InvalidInput(f"input {input!r}: an http(s) server lists no folder; use s3:// or gs://")
        if not input.endswith("/"):
            raise InvalidInput(f"input {input!r} must name a prefix, ending with '/'")
        return input
    path = _absolute("input", input)
    if not path.is_dir():
        raise InvalidInput(f"input {input!r} is not a folder")
    return input


def expand(inputs: Iterable[str], cache: ModelCache) -> list[Path]:
    """Every input file, in order: a URI fetched into the model cache first, a folder as the files in
    it (sorted). Blocking: call it from a thread."""
    paths = [cache.fetch(item).path if is_remote(item) else _absolute("input", item) for item in inputs]
    files = []
    for path in paths:
        if not path.exists():
            raise InvalidInput(f"input {str(path)!r} does not exist any more")
    for file in _files(paths):
        files.append(file)
        if len(files) > MAX_FILES:
            raise InvalidInput(f"the inputs hold more than {MAX_FILES} files; split the run")
    if not files:
        raise InvalidInput("the inputs hold no files")
    return files


@dataclass(frozen=True)
class Seen:
    """A file under a trigger's input: what a run is given for it, and what tells a change (size and
    time or version): a file is run once two looks in a row find it unchanged, so not half-written."""

    input: str
    fingerprint: tuple[object, ...]


def watched(input: str, check_seconds: float = 10.0) -> dict[str, Seen]:
    """The files under a trigger's input now, by their name relative to it. Blocking."""
    if is_remote(input):
        return _remote_files(input, check_seconds)
    root = Path(input)
    found: dict[str, Seen] = {}
    for file in _files([root]):
        relative = file.relative_to(root)
        if any(part.startswith(".") for part in relative.parts) or file.name.endswith(_PARTIAL_SUFFIXES):
            continue
        try:
            status = file.stat()
        except OSError:
            continue
        found[relative.as_posix()] = Seen(str(file), (status.st_size, status.st_mtime_ns))
    return found


def _remote_files(prefix: str, check_seconds: float) -> dict[str, Seen]:
    try:
        listing = Remote(prefix, scheme(prefix) or "", check_seconds).listing()
    except StorageNotFound:  # an empty prefix
        return {}
    found = {}
    for file in listing.files:
        relative = file.relative.split("/", 1)[1]  # under the listing's own folder name
        if relative.rsplit("/", 1)[-1].startswith(".") or relative.endswith(_PARTIAL_SUFFIXES):
            continue
        found[relative] = Seen(prefix + relative, (file.size, file.version))
    return found


def _files(paths: Iterable[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            for folder, dirs, names in os.walk(path):
                dirs.sort()
                for name in sorted(names):
                    file = Path(folder) / name
                    if file.is_file():
                        yield file
        elif path.is_file():
            yield path


def _check_text(what: str, value: str) -> None:
    if not value or "\x00" in value or len(value) > MAX_PATH:
        raise InvalidInput(f"{what} must be a path or URI of 1 to {MAX_PATH} characters, not {value[:100]!r}")


def _check_scheme(what: str, uri: str) -> None:
    found = scheme(uri)
    if found not in BACKENDS:
        known = ", ".join(f"{name}://" for name in BACKENDS)
        raise InvalidInput(f"{what} {uri!r}: unknown scheme {found}://; use a local path or {known}")


def _absolute(what: str, text: str) -> Path:
    path = local_path(text)
    if path is None or not path.is_absolute():
        raise InvalidInput(f"{what} {text!r} must be an absolute path (the control process has its own cwd)")
    return path
