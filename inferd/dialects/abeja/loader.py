"""The ABEJA dialect: ``inferd serve main:handler --dialect abeja`` (or ``HANDLER=main:handler``).

One handler per server, served under ``--name`` or its module's name.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.routing import BaseRoute

from inferd.core.dataplane import DataPlane
from inferd.core.errors import ModelLoadError
from inferd.core.importer import split_target
from inferd.core.model import Model
from inferd.core.requirements import pip_install
from inferd.dialects.abeja import rest
from inferd.dialects.abeja.handler import handler_target, looks_like_handler, model_root
from inferd.dialects.abeja.service import AbejaModel
from inferd.dialects.abeja.settings import AbejaSettings
from inferd.dialects.base import ServedModel, TryForm
from inferd.protocols.forms import UploadLimits

logger = logging.getLogger("inferd.abeja")


def served_name(settings: AbejaSettings) -> str:
    module = split_target(handler_target(settings.target))[0]
    return settings.name or module.rsplit(".", 1)[-1].removesuffix(".py").rsplit("/", 1)[-1]


def install_requirements() -> None:
    """pip-install the model root's requirements.txt (opt-in); a failure stops startup, as in ABEJA."""
    requirements = model_root() / "requirements.txt"
    if requirements.is_file():
        failure = pip_install(requirements)
        if failure:
            raise ModelLoadError(failure)


class AbejaDialect:
    name = "abeja"
    settings_type = AbejaSettings
    health_paths: tuple[str, ...] = ("/health_check",)

    def detect(self, target: str) -> bool:
        return looks_like_handler(target)

    def settings_from_environment(self) -> dict[str, Any]:
        return {}

    def models(self, settings: AbejaSettings) -> list[ServedModel]:
        target = handler_target(settings.target)
        if settings.install_requirements:
            install_requirements()

        def factory() -> Model:
            return AbejaModel(
                target,
                settings.abeja_style,
                settings.max_image_pixels,
                settings.max_video_seconds,
                UploadLimits.of(settings),
                settings.predict_in_thread,
            )

        return [ServedModel(served_name(settings), factory, settings.model_version)]

    def routes(self, dataplane: DataPlane, settings: AbejaSettings) -> list[BaseRoute]:
        return rest.routes(dataplane, served_name(settings))

    def grpc_services(self, dataplane: DataPlane, settings: AbejaSettings) -> list[Any]:
        return []

    def try_form(self, name: str, dataplane: DataPlane, settings: AbejaSettings) -> TryForm | None:
        """A JSON body or a file (an image, a video) posted to ``/``, as ABEJA's clients send them."""
        return TryForm("body", "/", {})


dialect = AbejaDialect()
