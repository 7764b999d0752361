"""The control process's token when none is configured: the control API runs code by design (a pushed
version is a program), so it is never open to every local process unless asked to be.

As Jupyter does: with no ``INFERD_AUTH_TOKENS``, the first start makes a token
(`secrets.token_urlsafe`), keeps it in ``DATA_DIR/platform/control-token`` (mode 0600, so only its
user reads it) and every later start with that data folder takes it again. The control process
also records, in the user's runtime folder (``INFERD_RUNTIME_DIR``, else ``$XDG_RUNTIME_DIR/inferd``,
else ``~/.local/share/inferd/runtime``; mode 0700), which port answers with which token file, so
the ``inferd`` CLI finds the token by the port it talks to, from any folder (`local_token`). The
record names the file, never the token, and is removed when the control process stops.

``INFERD_PLATFORM_OPEN=1`` (``--no-token``) is the single-user escape hatch: no token at all. A
control process on an address other than loopback needs tokens of its own (`host_refusal`): its
gateway would else serve every model to the network, and a generated token is for this machine's
user. Standard library only: the CLI imports it for every call.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from pathlib import Path
from urllib.parse import urlsplit

from inferd.core.hosts import is_loopback

TOKEN_FILE = "control-token"
#: The platform's folder in a data folder, where the token file is kept.
PLATFORM_FOLDER = "platform"
#: How big a token file or runtime record the CLI reads, at most (a token is 43 characters).
MAX_READ = 4096


#: What a client refused for want of a token is told.
HINT = (
    "set INFERD_TOKEN to the control process's token: it printed it at start, and keeps one it "
    "generated in DATA_DIR/platform/control-token"
)


def token_file(data_dir: Path) -> Path:
    return data_dir / PLATFORM_FOLDER / TOKEN_FILE


def load_or_create(path: Path) -> tuple[str, bool]:
    """The token kept at ``path``, made (and written with mode 0600) when there is none; and whether it
    was made now. The file appears whole (linked from a scratch file) or not at all, so a process
    reading it meanwhile never sees it empty; a kept file that others may read is made private again."""
    path.parent.mkdir(parents=True, exist_ok=True)
    token = _read(path)
    if token:
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            path.chmod(0o600)
        return token, False
    made = secrets.token_urlsafe(32)
    scratch = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(descriptor, "w") as out:
            out.write(made + "\n")
        path.unlink(missing_ok=True)  # empty or unreadable: made again
        try:
            os.link(scratch, path)
        except FileExistsError:  # another process made it first: its token is the one
            return load_or_create(path)
    finally:
        scratch.unlink(missing_ok=True)
    return made, True


def host_refusal(host: str, has_tokens: bool) -> str | None:
    """Why the control process may not listen on ``host`` (None when it may): beyond loopback only
    with tokens of its own."""
    if has_tokens or is_loopback(host):
        return None
    return (
        f"--host {host} is not a loopback address: the control API (which runs the code it is given) "
        "and the gateway would answer other machines; set INFERD_AUTH_TOKENS (or --auth-token) to "
        "tokens of your own, or keep --host 127.0.0.1"
    )


def runtime_dir(configured: Path | str | None = None) -> Path | None:
    """The user's runtime folder for the control processes' records (None when there is no home)."""
    configured = configured or os.environ.get("INFERD_RUNTIME_DIR")
    if configured:
        return Path(configured)
    if os.environ.get("XDG_RUNTIME_DIR"):
        return Path(os.environ["XDG_RUNTIME_DIR"]) / "inferd"
    try:
        return Path.home() / ".local" / "share" / "inferd" / "runtime"
    except RuntimeError:
        return None


def record_path(folder: Path, port: int) -> Path:
    return folder / f"platform-{port}.json"


def write_record(folder: Path, port: int, token_path: Path) -> Path:
    """Record that the control process on ``port`` (this process) takes the token in
    ``token_path``; the record's path, for `remove_record`."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = record_path(folder, port)
    scratch = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump({"port": port, "pid": os.getpid(), "token_file": str(token_path.resolve())}, out)
    os.replace(scratch, path)
    return path


def remove_record(path: Path) -> None:
    """Remove a record this process wrote (not one a later process on the same port replaced)."""
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass


def local_token(url: str) -> str | None:
    """The generated token of the control process at ``url``, when it is on this machine: the token
    file its runtime record names (if that process still runs), else the one in the data folder here
    (``INFERD_DATA_DIR``, else ``.inferd``). None for another machine, or when none is found."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    if not host or not is_loopback(host):
        return None  # never sent anywhere else
    folder = runtime_dir()
    if folder is not None:
        token = _from_record(record_path(folder, port))
        if token:
            return token
    return _read(token_file(Path(os.environ.get("INFERD_DATA_DIR") or ".inferd")))


def _from_record(path: Path) -> str | None:
    try:
        record = json.loads(path.read_text()[:MAX_READ])
        pid, named = int(record["pid"]), Path(record["token_file"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _alive(pid):
        return None  # a record left by a control process that died: its port may be another's now
    return _read(named)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read(path: Path) -> str | None:
    try:
        with path.open() as found:
            return found.read(MAX_READ).strip() or None
    except (OSError, UnicodeDecodeError):
        return None
