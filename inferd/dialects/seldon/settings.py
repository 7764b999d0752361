"""The Seldon dialect's own settings (besides what every dialect reads); ``serve`` gives them as
Seldon's ``--service-type`` and ``--parameters`` and reads ``PREDICTIVE_UNIT_*`` variables into them."""

from __future__ import annotations

from typing import Literal

from inferd.core.settings import DialectSettings

ServiceType = Literal["MODEL", "ROUTER", "TRANSFORMER", "OUTPUT_TRANSFORMER", "COMBINER", "OUTLIER_DETECTOR"]


class SeldonSettings(DialectSettings):
    """The component's type and constructor parameters, as seldon-core's microservice takes them."""

    service_type: ServiceType = "MODEL"
    """Seldon component type (``--service-type``). Every Seldon route is served whatever it says; it
    picks the method V2 calls: predict, transform_input, transform_output, route or aggregate."""

    parameters: str | None = None
    """Seldon ``--parameters``: a JSON list of ``{"name", "value", "type"}`` (INT, FLOAT, DOUBLE,
    STRING, BOOL) passed to the component's constructor as keyword arguments."""
