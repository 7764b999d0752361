"""A Dockerfile and a .dockerignore for a model project: inferd with the extras the project needs,
the project's own requirements, the project in ``/app``, ``inferd serve`` as the command and a
health check on V2's readiness route. The image runs as an unprivileged user."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from inferd import __version__
from inferd.core.settings import Settings
from inferd.deploy.project import APP_DIR, GRPC_PORT, HTTP_PORT, READY_PATH, Project, environment

DOCKERFILE = "Dockerfile"
DOCKERIGNORE = ".dockerignore"
#: What never belongs in the image: version control, environments, caches, inferd's state, secrets.
IGNORED = (
    ".git",
    ".gitignore",
    ".venv",
    "venv",
    "__pycache__",
    "*.pyc",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".inferd",
    ".env",
    DOCKERFILE,
    DOCKERIGNORE,
)
#: Files in a project that call for an extra of inferd.
EXTRA_MARKERS = {"*.onnx": "onnx", "saved_model.pb": "tensorflow"}
#: Extras a dialect always needs.
DIALECT_EXTRAS = {"abeja": "video"}


@dataclass(frozen=True)
class ImageFiles:
    dockerfile: str
    dockerignore: str


def extras(project: Project, settings: Settings, more: list[str]) -> list[str]:
    """inferd's extras for the project: ONNX or TensorFlow models found in its folder, the dialect's
    own needs, Ray for the ray engine, and ``more``."""
    found = {extra for pattern, extra in EXTRA_MARKERS.items() if _has(project.folder, pattern)}
    if settings.dialect in DIALECT_EXTRAS:
        found.add(DIALECT_EXTRAS[settings.dialect])
    if settings.engine == "ray":
        found.add("ray")
    return sorted(found | set(more))


def _has(folder: Path, pattern: str) -> bool:
    return any(True for _ in folder.rglob(pattern))


def requirement(chosen: list[str], spec: str | None) -> str:
    """What pip installs for inferd: ``spec`` when given (a wheel, a URL), else this version."""
    if spec:
        return spec
    return f"inferd[{','.join(chosen)}]=={__version__}" if chosen else f"inferd=={__version__}"


def dockerfile(project: Project, settings: Settings, inferd_spec: str, base: str | None) -> str:
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    has_requirements = (project.folder / "requirements.txt").is_file()
    variables = {
        "INFERD_HOST": "0.0.0.0",
        "INFERD_PORT": str(HTTP_PORT),
        "INFERD_GRPC_PORT": str(GRPC_PORT),
        **environment(settings),
    }
    ready = f"http://127.0.0.1:{HTTP_PORT}{READY_PATH}"
    check = f"import urllib.request; urllib.request.urlopen('{ready}', timeout=3)"
    lines = [
        f"# Written by `inferd build` (inferd {__version__}): the project in {APP_DIR}, served by inferd.",
        f"FROM {base or f'python:{python}-slim'}",
        "ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1",
        f"RUN pip install {_quote(inferd_spec)}",
        f"WORKDIR {APP_DIR}",
        *(["COPY requirements.txt ./", "RUN pip install -r requirements.txt"] if has_requirements else []),
        "COPY . .",
        # inferd keeps state (training jobs) under the working directory: the user must own it.
        f"RUN useradd --create-home --uid 10001 inferd && chown -R inferd {APP_DIR}",
        "USER 10001",
        "ENV " + " ".join(f"{key}={_quote(value)}" for key, value in variables.items()),
        f"EXPOSE {HTTP_PORT} {GRPC_PORT}",
        "HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 "
        f"CMD {json.dumps(['python', '-c', check])}",
        f"CMD {json.dumps(['inferd', 'serve', project.target])}",
    ]
    return "\n".join(lines) + "\n"


def _quote(value: str) -> str:
    """A shell-safe word (Dockerfile RUN and ENV lines are shell-like)."""
    return shlex.quote(value)


def image_files(
    project: Project, settings: Settings, more_extras: list[str], inferd_spec: str | None, base: str | None
) -> ImageFiles:
    spec = requirement(extras(project, settings, more_extras), inferd_spec)
    return ImageFiles(dockerfile(project, settings, spec, base), "\n".join(IGNORED) + "\n")
