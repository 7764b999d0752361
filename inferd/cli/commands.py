"""Every command of ``inferd``, registered in the order ``inferd --help`` lists them: one module per
concern.

serve and predict: serving (``serve``) and one prediction in this process (``predict``); client: a
running server (``models``, ``call``, ``train --url``); project: project tools (``init``, ``build``,
``export``); abeja and deepaas: those platforms' local tools. Every command imports what it runs when
it runs, so ``inferd --help`` stays quick; ``inferd serve`` does not even build this app
(`inferd.cli.main`).
"""

from __future__ import annotations

from typing import Annotated

import typer

from inferd.cli import (
    abeja,
    client,
    deepaas,
    platform,
    platform_runs,  # noqa: F401  (its run and trigger verbs join `platform.app`)
    platform_verbs,
    predict,
    project,
    serve,
)
from inferd.cli.help import Command, Group, lazy

app = typer.Typer(
    name="inferd",
    help="Serve Seldon, DEEPaaS, Cortex, ABEJA and native model code over their own protocols and V2.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=Group,
)
export_app = typer.Typer(help="Write deployment files for a model project.", no_args_is_help=True, cls=Group)


def _version(value: bool) -> None:
    if value:
        from inferd import __version__

        print(f"inferd {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """inferd: one model server for many model conventions."""


app.command("serve", cls=lazy(serve.command))(serve.stand_in)
app.command(cls=Command)(project.init)
app.command(cls=Command)(predict.predict)
app.command(cls=Command)(deepaas.train)
app.command("run-local", cls=Command)(abeja.run_local)
app.command("run-local-server", cls=Command)(abeja.run_local_server)
app.command("run", cls=Command)(abeja.run_batch)
app.command("train-local", cls=Command)(abeja.train_local)
app.command("models", cls=Command)(client.list_models)
app.command("call", cls=Command)(client.call_model)
app.command(cls=Command)(project.build)
app.add_typer(export_app, name="export")
app.add_typer(platform.app, name="platform")
platform_verbs.register(app)
export_app.command("k8s", cls=Command)(project.export_k8s)
