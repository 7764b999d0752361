"""``inferd predict``: one prediction in this process, V2 JSON in and out (or DEEPaaS arguments)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from inferd.cli.common import DIALECT_HELP, fail, read, runtime_or_exit, settings_from
from inferd.cli.params import ArgOption, FileOption


def predict(
    target: Annotated[
        str, typer.Argument(help="What to load, as for `inferd serve` (a DEEPaaS model name).")
    ],
    input: Annotated[
        str | None, typer.Option("--input", "-i", help="A V2 inference request JSON file, or - for stdin.")
    ] = None,
    dialect: Annotated[str | None, typer.Option(help=DIALECT_HELP)] = None,
    model: Annotated[str | None, typer.Option(help="Model to call when the target serves several.")] = None,
    arg: ArgOption = None,
    file: FileOption = None,
) -> None:
    """Run one prediction in this process: V2 JSON in and out, or DEEPaaS --arg/--file arguments."""
    from inferd.cli.deepaas import deepaas_call
    from inferd.core.errors import InferdError
    from inferd.engines import local
    from inferd.protocols.status import error_message
    from inferd.protocols.v2.http_codec import decode_request, encode_response
    from inferd.server.logging import configure_logging

    if dialect == "deepaas":
        deepaas_call("predict", target, arg or [], file or [])
        return
    if input is None:
        fail("missing --input: a V2 inference request JSON file, or - for stdin")
    settings = settings_from(target=target, dialect=dialect, log_level="warning")
    configure_logging(settings.log_level)
    runtime = runtime_or_exit(settings)
    body = sys.stdin.buffer.read() if input == "-" else read(Path(input))

    async def once() -> bytes:
        await runtime.registry.load_all()
        try:
            request = decode_request(body, None)
            name = model or runtime.registry.names()[0]
            response = await runtime.dataplane.infer(name, None, request, "cli")
            content, _ = encode_response(response, request)
            return content
        finally:
            await runtime.registry.unload_all()

    try:
        content = local.run(once())
    except InferdError as exc:
        fail(error_message(exc), code=1)
    sys.stdout.write(content.decode() + "\n")
