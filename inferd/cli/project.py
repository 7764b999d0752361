"""Project tools: ``inferd init`` (a new project), ``inferd build`` (its Dockerfile) and ``inferd export``
(its deployment files)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from inferd.cli.common import DIALECT_HELP, errors, escape, fail, load_project

if TYPE_CHECKING:
    from inferd.config.project import Project


def init(
    folder: Annotated[Path, typer.Argument(help="The project folder to create (new or empty).")],
    dialect: Annotated[
        str, typer.Option(help="The convention: native, seldon, deepaas, cortex or abeja.")
    ] = "native",
) -> None:
    """Create a project that `inferd serve FOLDER` serves at once: model code, inferd.yaml, requirements,
    a test, a README and a sample request for `inferd call`."""
    from inferd import scaffold

    try:
        written = scaffold.create(folder, dialect)
    except scaffold.ScaffoldError as exc:
        fail(str(exc))
    project = load_project(str(folder))
    for path in written:
        errors().print(f"  [green]created[/] {escape(str(path))}", highlight=False)
    errors().print(
        f"Next: {_install_first(project.dialect)}[bold]inferd serve {escape(str(folder))}[/], then "
        f"[bold]inferd call {project.name}{_url_option(project)} "
        f"--input {escape(str(folder / 'sample.json'))}[/] (see the README).",
        highlight=False,
        soft_wrap=True,  # commands to copy: never broken across lines
    )


def _install_first(dialect: str) -> str:
    """``pip install 'inferd[deepaas]'``, then: the first step where the project's dialect needs an
    extra this environment lacks (`make demo`'s has none of DEEPaaS's libraries)."""
    if dialect != "deepaas":
        return ""
    from inferd.dialects.deepaas import extra

    if not extra.missing():
        return ""
    install = escape(f"pip install 'inferd[{extra.EXTRA}]'")
    return f"[bold]{install}[/], then "


def _url_option(project: Project) -> str:
    """``--url`` of the server ``inferd serve`` starts for ``project`` when it is not the one ``inferd
    call`` assumes: a dialect's server listens where its platform's did (Seldon 9000, DEEPaaS 5000)."""
    from inferd.cli.client import DEFAULT_URL
    from inferd.cli.serve import with_platform_environment

    settings = with_platform_environment(project)
    url = f"http://{settings.host}:{settings.port}"
    return "" if url == DEFAULT_URL else f" --url {url}"


ProjectTarget = Annotated[
    str, typer.Argument(help="What `inferd serve` serves: a file, folder, module:Class or handler.")
]
NameOption = Annotated[str | None, typer.Option(help="Serve the model under this name (names resources).")]


def _deployment(target: str, **given: Any) -> Project:
    """``target``'s project, its dialect told if its code can be imported here (for the extras)."""
    from inferd.dialects import resolve_dialect

    def told(name: str, target: str) -> str:
        try:
            return resolve_dialect(name, target).name
        except Exception:  # user code that does not import here: the image's server will tell
            return name

    return load_project(target, told, **given)


def export_k8s(
    target: ProjectTarget,
    kind: Annotated[
        str | None,
        typer.Option(
            "--target", help="deployment (+ Service + HPA), kserve or rayservice [default: by the engine]."
        ),
    ] = None,
    image: Annotated[str | None, typer.Option(help="The project's image [default: NAME:latest].")] = None,
    name: NameOption = None,
    dialect: Annotated[str | None, typer.Option(help=DIALECT_HELP)] = None,
    replicas: Annotated[int | None, typer.Option(help="Replicas [default: 1].")] = None,
    autoscale: Annotated[str | None, typer.Option(help="MIN:MAX replicas, scaled by load.")] = None,
    ray_haproxy: Annotated[
        bool | None, typer.Option("--ray-haproxy", help="rayservice: Ray Serve's HAProxy ingress.")
    ] = None,
    max_batch_size: Annotated[int | None, typer.Option(help="Adaptive batching, as for serve.")] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file [default: stdout].")
    ] = None,
) -> None:
    """Print (or write) Kubernetes manifests serving TARGET from its image, for `kubectl apply -f`."""
    from inferd.deploy import k8s
    from inferd.deploy.image import resource_name

    if kind is not None and kind not in k8s.KINDS:
        fail(f"unknown --target {kind!r}: choose one of {', '.join(k8s.KINDS)}")
    project = _deployment(
        target,
        name=name,
        dialect=dialect,
        replicas=replicas,
        autoscale=autoscale,
        ray_haproxy=ray_haproxy,
        max_batch_size=max_batch_size,
    )
    kind = kind or ("rayservice" if project.engine == "ray" else "deployment")
    text = k8s.to_yaml(k8s.manifests(kind, project, image or f"{resource_name(project)}:latest"))
    if output is None:
        sys.stdout.write(text)
        return
    output.write_text(text)
    errors().print(f"wrote {output}", highlight=False, soft_wrap=True)


def build(
    target: ProjectTarget,
    name: NameOption = None,
    dialect: Annotated[str | None, typer.Option(help=DIALECT_HELP)] = None,
    engine: Annotated[str | None, typer.Option(help="ray: an image for a RayService.")] = None,
    extra: Annotated[
        list[str] | None, typer.Option(help="Another extra of inferd to install (repeatable).")
    ] = None,
    inferd_spec: Annotated[
        str | None,
        typer.Option(help="What pip installs for inferd (a wheel, a URL) [default: this version]."),
    ] = None,
    base: Annotated[
        str | None, typer.Option(help="The base image [default: python:X.Y-slim of this Python].")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing Dockerfile.")] = False,
) -> None:
    """Write a Dockerfile and a .dockerignore into TARGET's project folder, for `docker build`."""
    from inferd.deploy import docker
    from inferd.deploy.image import resource_name
    from inferd.deploy.wheel import WheelError

    project = _deployment(target, name=name, dialect=dialect, engine=engine)
    dockerfile = project.folder / docker.DOCKERFILE
    if dockerfile.exists() and not force:
        fail(f"{dockerfile} exists: pass --force to replace it")
    try:
        files = docker.image_files(project, extra or [], inferd_spec, base)
    except WheelError as exc:
        fail(str(exc), code=1)
    dockerfile.write_text(files.dockerfile)
    (project.folder / docker.DOCKERIGNORE).write_text(files.dockerignore)
    command = f"docker build -t {resource_name(project)} {project.folder}"
    errors().print(
        f"wrote {dockerfile} and {docker.DOCKERIGNORE}; build with: {command}",
        highlight=False,
        soft_wrap=True,
    )
