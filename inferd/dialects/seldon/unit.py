"""Who this unit is, read from the variables the Seldon operator injects, with seldon-core 1.18's
defaults (its ``env_utils``): a variable that is set counts even when empty, as it did there."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

NOT_IMPLEMENTED = "NOT_IMPLEMENTED"
#: ``PREDICTIVE_UNIT_IMAGE`` when unset: an image named and tagged ``NOT_IMPLEMENTED``.
NOT_IMPLEMENTED_IMAGE = f"{NOT_IMPLEMENTED}:{NOT_IMPLEMENTED}"
#: The key of this unit in a feedback's ``response.meta.routing`` without ``PREDICTIVE_UNIT_ID``.
DEFAULT_ROUTING_KEY = "0"


def split_image(image: str) -> tuple[str, str]:
    """(name, version) of an image as seldon-core splits it: at the last ``:``, so an image without
    a tag is all version (``foo`` → ``("", "foo")``) and a registry port stays in the name."""
    name, _, version = image.rpartition(":")
    return name, version


def predictor_version(environ: Mapping[str, str] = os.environ) -> str:
    """``version`` of ``PREDICTOR_LABELS``; unset or unreadable (seldon-core failed to start then),
    ``NOT_IMPLEMENTED``."""
    try:
        labels = json.loads(environ.get("PREDICTOR_LABELS", "{}"))
    except ValueError:
        return NOT_IMPLEMENTED
    version = labels.get("version", NOT_IMPLEMENTED) if isinstance(labels, dict) else NOT_IMPLEMENTED
    return str(version)


@dataclass(frozen=True)
class Unit:
    """The predictive unit this component is: its id (None when ``PREDICTIVE_UNIT_ID`` is unset) and
    image; in an inferd graph, the node's name and image."""

    id: str | None
    image: str = NOT_IMPLEMENTED_IMAGE

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> Unit:
        return cls(
            environ.get("PREDICTIVE_UNIT_ID"), environ.get("PREDICTIVE_UNIT_IMAGE", NOT_IMPLEMENTED_IMAGE)
        )

    def request_path(self) -> dict[str, str]:
        """This unit's entry in ``meta.requestPath``: none without an id, as seldon-core."""
        return {} if self.id is None or self.id == NOT_IMPLEMENTED else {self.id: self.image}

    @property
    def routing_key(self) -> str:
        return DEFAULT_ROUTING_KEY if self.id is None else self.id
