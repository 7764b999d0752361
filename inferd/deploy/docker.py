"""A Dockerfile and a .dockerignore for a model project: inferd with the extras the project needs,
the project's own requirements, the project in ``/app``, ``inferd serve`` as the command and a
health check on V2's readiness route. The image runs as an unprivileged user."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass

from inferd import __version__
from inferd.config.project import Project
from inferd.deploy.image import APP_DIR, GRPC_PORT, HTTP_PORT, READY_PATH, environment, image_target
from inferd.deploy.wheel import WHEEL_DIR, requirement

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


@dataclass(frozen=True)
class ImageFiles:
    dockerfile: str
    dockerignore: str


def dockerfile(project: Project, inferd_spec: str, base: str | None) -> str:
    """The image's recipe; ``inferd_spec`` is what pip installs for inferd (a wheel of the build
    context is copied first, at the same place relative to the working directory)."""
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    has_requirements = (project.folder / "requirements.txt").is_file()
    variables = {
        "INFERD_HOST": "0.0.0.0",
        "INFERD_PORT": str(HTTP_PORT),
        "INFERD_GRPC_PORT": str(GRPC_PORT),
        **environment(project),
    }
    ready = f"http://127.0.0.1:{HTTP_PORT}{READY_PATH}"
    check = f"import urllib.request; urllib.request.urlopen('{ready}', timeout=3)"
    lines = [
        f"# Written by `inferd build` (inferd {__version__}): the project in {APP_DIR}, served by inferd.",
        f"FROM {base or f'python:{python}-slim'}",
        "ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1",
        f"WORKDIR {APP_DIR}",
        *([f"COPY {WHEEL_DIR}/ {WHEEL_DIR}/"] if inferd_spec.startswith(f"./{WHEEL_DIR}/") else []),
        f"RUN pip install {_quote(inferd_spec)}",
        *(["COPY requirements.txt ./", "RUN pip install -r requirements.txt"] if has_requirements else []),
        "COPY . .",
        # inferd keeps state (training jobs) under the working directory: the user must own it.
        f"RUN useradd --create-home --uid 10001 inferd && chown -R inferd {APP_DIR}",
        "USER 10001",
        "ENV " + " ".join(f"{key}={_quote(value)}" for key, value in variables.items()),
        f"EXPOSE {HTTP_PORT} {GRPC_PORT}",
        "HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 "
        f"CMD {json.dumps(['python', '-c', check])}",
        f"CMD {json.dumps(['inferd', 'serve', image_target(project)])}",
    ]
    return "\n".join(lines) + "\n"


def _quote(value: str) -> str:
    """A shell-safe word (Dockerfile RUN and ENV lines are shell-like)."""
    return shlex.quote(value)


def image_files(
    project: Project, more_extras: list[str], inferd_spec: str | None, base: str | None
) -> ImageFiles:
    """The Dockerfile and .dockerignore of ``project``; unless ``inferd_spec`` says what to install,
    a wheel of the running inferd may be written into the project folder (see `requirement`)."""
    spec = inferd_spec or requirement(project.extras(more_extras), project.folder)
    return ImageFiles(dockerfile(project, spec, base), "\n".join(IGNORED) + "\n")
