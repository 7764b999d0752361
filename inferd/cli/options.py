"""``inferd serve``'s options, generated from the Settings fields: a new setting is one edit (its field
and docstring in ``inferd/core/settings.py`` or its dialect's ``settings.py``) and becomes
``--its-name`` with its docstring's first sentence as help and its default shown.

Hand-written here are only what a field cannot say: which help panel an option sits in (unlisted
fields land in the Server panel), the few names that differ from the field's (today's and the
platforms' spellings), the fields that are no option, and the platforms' other names for ``--port``
and ``--host``. Importing this module imports the settings (pydantic), so ``inferd --help`` does not:
``serve`` is built from here only when it runs or shows its own help (see ``help.Lazy``). It imports
no typer either: `inferd.cli.argv` reads a serving process's command line from these tables alone,
and typer is imported by the functions that build the click command.
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin

from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from inferd.config.settings import Settings
from inferd.core.settings_docs import describe

if TYPE_CHECKING:
    from typer.core import TyperCommand

#: The panels of `inferd serve --help`, shown after typer's own Arguments and Options in the order of
#: `PANELS`.
SERVER = "Server"
LOGGING = "Logging"
WORKERS = "Workers and scaling"
RAY = "Ray Serve"
BATCHING = "Batching"
LIMITS = "Limits"
ACCESS = "Access"
SELDON = "Seldon"
GRAPHS = "Inference graphs"
DEEPAAS = "DEEPaaS"
ABEJA = "ABEJA"
REPOSITORY = "Model repository"
RUNTIMES = "Model files"

#: Fields that are no option, and why (docs/settings.md says how else they are set).
EXCLUDED = {
    "target": "the TARGET argument",
    "models": "nested per model: INFERD_MODELS__<NAME>__<SETTING> or the --model-settings file",
}

#: The help panel of each option, in the order `inferd serve --help` shows them; None is typer's own
#: "Options" panel (what is served). A field not listed here is shown at the end of the Server panel.
PANELS: dict[str | None, tuple[str, ...]] = {
    None: ("dialect", "name", "model_version"),
    SERVER: (
        *("host", "port", "grpc_port", "grpc_enabled", "grpc_server", "http", "metrics_port", "data_dir"),
        *("model_cache_dir", "model_cache_size", "install_requirements", "graceful_timeout"),
    ),
    LOGGING: (
        *("log_level", "log_format", "access_log", "payload_log_url", "payload_log_mode"),
        *("payload_log_sample", "payload_log_queue", "payload_log_namespace", "payload_log_timeout"),
        "tracing",
    ),
    WORKERS: (
        *("workers", "isolate", "hang_timeout", "restart_wait", "worker_memory_limit"),
        *("memory_check_interval", "predict_in_thread"),
    ),
    RAY: (
        *("engine", "replicas", "autoscale", "ray_address", "ray_app_name", "ray_route_prefix"),
        *("ray_proxy_port", "ray_haproxy", "ray_num_cpus"),
        *("ray_max_ongoing_requests", "ray_target_ongoing_requests", "ray_user_code_thread"),
    ),
    BATCHING: (
        "max_batch_size",
        "max_batch_time_ms",
        "max_queue_size",
        "max_concurrency",
        "model_settings",
    ),
    LIMITS: (
        *("request_timeout", "max_body_size", "max_header_size", "header_timeout"),
        *("body_timeout", "min_body_rate"),
        *("keep_alive_timeout", "max_connections", "max_upload_files", "max_upload_size"),
        *("grpc_max_message_size", "max_image_pixels", "max_video_seconds"),
    ),
    ACCESS: ("auth_tokens", "allowed_origins", "allowed_hosts"),
    SELDON: ("service_type", "parameters"),
    GRAPHS: ("graph_node_timeout", "graph_startup_timeout"),
    DEEPAAS: ("model_name", "base_path", "predict_endpoint", "train_endpoint", "doc_endpoint", "warm"),
    ABEJA: ("abeja_style",),
    REPOSITORY: ("repository", "repository_poll", "max_loaded_models", "allowed_outside_targets"),
    RUNTIMES: ("model_format", "predict_method", "signature_key"),
}

#: Option names that are not ``--field-name``: a list's option names one item (repeatable), and
#: DEEPaaS spells its switches off ``--nox`` (oslo.config's way), which its users type.
NAMES = {
    "grpc_enabled": "--grpc/--no-grpc",
    "auth_tokens": "--auth-token",
    "payload_log_namespace": "--payload-log-ns",
    "allowed_origins": "--allowed-origin",
    "allowed_hosts": "--allowed-host",
    "allowed_outside_targets": "--allowed-outside-target",
    "predict_endpoint": "--predict-endpoint/--nopredict-endpoint",
    "train_endpoint": "--train-endpoint/--notrain-endpoint",
    "doc_endpoint": "--doc-endpoint/--nodoc-endpoint",
    "warm": "--warm/--nowarm",
    "isolate": "--isolate/--no-isolate",
    "access_log": "--access-log/--no-access-log",
}


#: What the help shows an option takes (a choice's values are listed in its help: a narrow column of
#: types leaves the names whole at 80 columns).
METAVARS: dict[Any, str] = {int: "INTEGER", float: "FLOAT", str: "TEXT", Path: "PATH", list[str]: "TEXT"}


class Alias:
    """A platform's own name for an option (Seldon's ``--http-port``, DEEPaaS's ``--listen-ip``): the
    option wins when both are given."""

    def __init__(self, field: str, help: str, shown_in: str) -> None:
        self.field, self.help, self.panel = field, help, shown_in


ALIASES = {
    "http_port": Alias("port", "Seldon's name for --port.", SELDON),
    "listen_ip": Alias("host", "DEEPaaS's name for --host.", DEEPAAS),
    "listen_port": Alias("port", "DEEPaaS's name for --port.", DEEPAAS),
}


def first_sentence(doc: str | None) -> str:
    """A docstring's first sentence on one line for the help: a setting it names in double backquotes
    written as its option (``workers`` → --workers; a name in single backquotes is some other key, a
    log field's or a file's, and stays), an option named in parentheses dropped (the help sits next to
    it), backquotes removed."""
    paragraph = " ".join((doc or "").strip().split("\n\n")[0].split())
    sentence = re.split(r"(?<=[.!?])\s", paragraph, maxsplit=1)[0]
    sentence = re.sub(r" \(``--[a-z-]+``\)", "", sentence)
    named = re.sub(r"``([a-z_]+)``", lambda found: _as_option(found[1]), sentence)
    return named.replace("`", "")


def _as_option(name: str) -> str:
    return option_name(name) if name in Settings.model_fields and name not in EXCLUDED else name


def option_name(field: str) -> str:
    """The option that sets ``field`` (its first name, for a flag pair)."""
    return NAMES.get(field, "--" + field.replace("_", "-")).split("/")[0]


def spelled(name: str, field: FieldInfo) -> str:
    """How the option of ``field`` is declared: ``--name``, or ``--name/--no-name`` for a switch that is
    on by default (the option turns it off)."""
    declared = NAMES.get(name, f"--{name.replace('_', '-')}")
    if field.annotation is bool and "/" not in declared and field.default is True:
        return f"{declared}/--no-{declared[2:]}"
    return declared


def fields(model: type[BaseSettings] = Settings) -> list[tuple[str, str | None]]:
    """Every option's field of ``model`` with its panel, in the order they are shown."""
    listed = [(name, shown_in) for shown_in, names in PANELS.items() for name in names]
    known = {name for name, _ in listed} | set(EXCLUDED)
    return listed + [(name, SERVER) for name in model.model_fields if name not in known]


def parameters(model: type[BaseSettings] = Settings) -> list[inspect.Parameter]:
    """The keyword parameters of ``serve``'s callback: TARGET, one option per field of ``model``, the
    aliases."""
    import typer

    target = typer.Argument(
        metavar="TARGET",
        help="path/model.py:Class, module:Class, a directory or config file; "
        "without it, the ABEJA handler named by HANDLER.",
    )
    made = [_keyword("target", Annotated[str | None, target])]
    describe(model)  # each field's docstring, its help
    by_panel: dict[str | None, list[inspect.Parameter]] = {}
    for name, shown_in in fields(model):
        by_panel.setdefault(shown_in, []).append(_option(name, model.model_fields[name], shown_in))
    for name, alias in ALIASES.items():
        kind = option_kind(alias.field, model.model_fields[alias.field])
        option = typer.Option(help=alias.help, rich_help_panel=alias.panel, metavar=METAVARS[kind])
        by_panel.setdefault(alias.panel, []).append(_keyword(name, Annotated[kind | None, option]))
    return made + [parameter for group in by_panel.values() for parameter in group]


def given(values: Mapping[str, Any]) -> dict[str, Any]:
    """The settings given on the command line (None where not given), the aliases folded in."""
    settings = {name: (value or None) if isinstance(value, list) else value for name, value in values.items()}
    for name, alias in ALIASES.items():
        value = settings.pop(name, None)
        if settings.get(alias.field) is None:
            settings[alias.field] = value
    return settings


def command(
    callback: Callable[..., Any], cls: type[TyperCommand], model: type[BaseSettings] = Settings
) -> TyperCommand:
    """The click command running ``callback(**values)`` with the parameters generated from ``model``."""

    import typer

    def serve(**values: Any) -> Any:
        return callback(**values)

    made = parameters(model)
    serve.__signature__ = inspect.Signature(made)  # type: ignore[attr-defined]
    serve.__annotations__ = {parameter.name: parameter.annotation for parameter in made}
    serve.__doc__ = callback.__doc__
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command("serve", cls=cls)(serve)
    made_command = typer.main.get_command(app)
    assert isinstance(made_command, cls)
    return made_command


def _keyword(name: str, annotation: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)


def _option(name: str, field: FieldInfo, shown_in: str | None) -> inspect.Parameter:
    import typer

    choices = option_choices(field.annotation)
    kind = Literal[tuple(choices)] if choices else option_kind(name, field)
    help = first_sentence(field.description)
    if choices:
        help += f" One of: {', '.join(choices)}."
    if kind == list[str]:
        help += " Repeatable."
    option = typer.Option(
        spelled(name, field),
        help=help + _default(field, kind),
        rich_help_panel=shown_in,
        metavar="CHOICE" if choices else METAVARS.get(kind),
        show_default=False,
    )
    return _keyword(name, Annotated[kind | None, option])


def option_kind(name: str, field: FieldInfo) -> Any:
    """The Python type typer parses an option of ``field`` as (a list: repeatable)."""
    annotation = _without_none(field.annotation)
    if get_origin(annotation) is list:
        return list[str]
    if annotation in (bool, int, float, str, Path):
        return annotation
    raise TypeError(f"setting {name!r} of type {annotation} has no option: name it in EXCLUDED")


def option_choices(annotation: Any) -> list[str] | None:
    """The values a Literal field (or one that is a bool or a Literal) takes, as typed on a command line."""
    annotation = _without_none(annotation)
    if get_origin(annotation) is Literal:
        return [str(value) for value in get_args(annotation)]
    if get_origin(annotation) in (Union, types.UnionType):
        parts = [
            option_choices(part) or (["true", "false"] if part is bool else None)
            for part in get_args(annotation)
        ]
        if all(parts):
            return [value for part in parts for value in part or ()]
    return None


def _without_none(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [part for part in get_args(annotation) if part is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return annotation


def _default(field: FieldInfo, kind: Any) -> str:
    """`` [default: X]`` for the help, when the field has a default worth showing."""
    value = field.get_default(call_default_factory=True)
    if value is None or value == "" or value == []:
        return ""
    if isinstance(value, bool):
        value = ("on" if value else "off") if kind is bool else str(value).lower()
    elif isinstance(value, float):
        value = f"{value:g}"
    return f" [default: {value}]"
