"""The inferd an image installs. An inferd installed from a package index is installed again by its
version; any other (a source checkout, an editable install, a wheel built here, a Git URL) would
not be, since ``pip install inferd==X`` fails wherever X is not published, or installs other code.
Where it came from is what its installation recorded (PEP 610's ``direct_url.json``), so no index is
asked; a wheel is then built from the running inferd into the image's build context."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

import inferd
from inferd import __version__

#: The folder of the build context that holds the wheel of inferd the image installs.
WHEEL_DIR = ".inferd-wheel"
#: How long building the wheel of the running inferd may take.
BUILD_SECONDS = 300


class WheelError(Exception):
    """inferd cannot be put into the image: the message says why and what to pass instead."""


@dataclass(frozen=True)
class Origin:
    """Where the running inferd comes from: a package index (``source`` and ``url`` None), a folder
    to build a wheel from, a wheel file, or a URL pip installs from."""

    source: Path | None = None
    wheel: Path | None = None
    url: str | None = None


def origin() -> Origin:
    """The running inferd's origin: the checkout its code is in, else what its installation says."""
    checkout = Path(inferd.__file__).resolve().parent.parent
    if _is_inferd_source(checkout):
        return Origin(source=checkout)
    try:
        recorded = metadata.distribution("inferd").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        recorded = None
    return origin_of(json.loads(recorded) if recorded else None)


def origin_of(direct_url: dict[str, object] | None) -> Origin:
    """The origin a PEP 610 record (None: installed from an index) tells."""
    if direct_url is None:
        return Origin()
    url = str(direct_url.get("url", ""))
    if url.startswith("file:"):
        path = Path(unquote(urlparse(url).path))
        if path.is_dir() and _is_inferd_source(path):
            return Origin(source=path)
        if path.is_file() and path.suffix == ".whl":
            return Origin(wheel=path)
        raise WheelError(f"inferd was installed from {url}, which is gone: pass --inferd-spec")
    vcs = direct_url.get("vcs_info")
    if isinstance(vcs, dict):
        return Origin(url=f"{vcs['vcs']}+{url}@{vcs['commit_id']}")
    return Origin(url=url)


def _is_inferd_source(folder: Path) -> bool:
    project = folder / "pyproject.toml"
    return (
        project.is_file()
        and (folder / "inferd" / "__init__.py").is_file()
        and ('name = "inferd"' in project.read_text())
    )


def requirement(extras: list[str], into: Path) -> str:
    """What pip installs for inferd with ``extras``, working in the build context ``into``: this
    version from an index, else a wheel of the running inferd written to ``into/WHEEL_DIR`` (named
    relative to ``into``), else the URL it came from."""
    found = origin()
    chosen = f"[{','.join(extras)}]" if extras else ""
    if found.url is not None:
        return f"inferd{chosen} @ {found.url}"
    if found.source is None and found.wheel is None:
        return f"inferd{chosen}=={__version__}"
    folder = into / WHEEL_DIR
    folder.mkdir(exist_ok=True)
    for old in folder.glob("inferd-*.whl"):
        old.unlink()
    if found.wheel is not None:
        wheel = folder / found.wheel.name
        wheel.write_bytes(found.wheel.read_bytes())
    else:
        assert found.source is not None
        wheel = build_wheel(found.source, folder)
    return f"./{WHEEL_DIR}/{wheel.name}{chosen}"


def build_wheel(source: Path, into: Path) -> Path:
    """A wheel of the inferd in ``source``, built by pip into ``into``; pip fetches the build backend
    from the index only when it is not installed here."""
    isolation = [] if importlib.util.find_spec("hatchling") is None else ["--no-build-isolation"]
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", *isolation, "-w", str(into)]
    try:
        done = subprocess.run(
            [*command, str(source)], capture_output=True, text=True, timeout=BUILD_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        raise WheelError(f"building a wheel of {source} took over {BUILD_SECONDS} s") from None
    wheels = sorted(into.glob("inferd-*.whl"))
    if done.returncode != 0 or not wheels:
        raise WheelError(f"cannot build a wheel of {source}: {done.stderr.strip()[-2000:]}")
    return wheels[-1]
