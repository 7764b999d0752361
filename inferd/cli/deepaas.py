"""DEEPaaS's local tools: ``inferd train`` (like ``deepaas-cli train``) and the DEEPaaS form of
``inferd predict``, both running the model in this process."""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Annotated

import typer

from inferd.cli.common import errors, fail, settings_from
from inferd.cli.params import ArgOption, FileOption


def train(
    target: Annotated[str, typer.Argument(help="The DEEPaaS model: an entry-point name or module:attr.")],
    dialect: Annotated[str, typer.Option(help="Only deepaas trains.")] = "deepaas",
    arg: ArgOption = None,
    file: FileOption = None,
    url: Annotated[
        str | None, typer.Option("--url", help="Start the training on this running server instead.")
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow", help="With --url: show the job until it ends; exit 1 unless done.")
    ] = False,
) -> None:
    """Train a DEEPaaS model once in this process, like `deepaas-cli train`, and print the record; or,
    with --url, start a training job on a running server and print (or --follow) its record."""
    if dialect != "deepaas":
        fail("only DEEPaaS models train: pass --dialect deepaas")
    if url is None:
        if follow:
            fail("--follow needs --url: a training in this process is always followed to its end")
        deepaas_call("train", target, arg or [], file or [])
        return
    if file:
        fail("--file is for trainings in this process; a server's train route takes arguments only")
    from inferd.cli.client import remote_training

    remote_training(url, target, arg or [], follow)


def deepaas_call(method: str, target: str, args: list[str], files: list[str]) -> None:
    """Call ``method`` (predict or train) of the DEEPaaS model ``target`` once and print its answer."""
    from inferd.core.errors import ModelLoadError, TargetError
    from inferd.dialects.deepaas import local as deepaas
    from inferd.server.logging import configure_logging

    settings = settings_from(dialect="deepaas", log_level="warning")
    configure_logging(settings.log_level)
    try:
        model = deepaas.load(target, settings)
        # a training may take long: a spinner while it runs (on a terminal only, on stderr)
        with errors().status(f"{method} {target}…") if method == "train" else contextlib.nullcontext():
            result = deepaas.call(model, method, args, files)
    except deepaas.LocalCallError as exc:
        fail(str(exc))
    except (TargetError, ModelLoadError) as exc:
        fail(exc.message, code=1)
    if isinstance(result, (bytes, bytearray)):
        sys.stdout.buffer.write(result)
        sys.stdout.flush()
        return
    sys.stdout.write(json.dumps(result, indent=2, default=str) + "\n")
