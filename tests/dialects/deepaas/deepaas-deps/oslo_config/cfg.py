"""What deepaas 2.6.0 uses of oslo.config at import: option declarations and their registration."""

from __future__ import annotations

from typing import Any


class Opt:
    def __init__(self, name: str, **options: Any) -> None:
        self.name, self.default = name, options.get("default")


BoolOpt = IntOpt = StrOpt = Opt


class ConfigOpts:
    def register_cli_opts(self, opts: list[Opt]) -> None:
        for opt in opts:
            setattr(self, opt.name.replace("-", "_"), opt.default)

    register_opts = register_cli_opts


CONF = ConfigOpts()
