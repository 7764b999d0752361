"""Every setting of one ``serve`` in one object: the server's (`ServerSettings`) and each dialect's,
declared beside its code. It is what ``INFERD_*`` variables, ``inferd.yaml`` and ``serve``'s options
fill, what ``docs/settings.md`` is generated from, and what engines hand their processes; the server
gives each dialect its own part alone (`inferd.core.settings.view`)."""

from __future__ import annotations

from inferd.core.settings import ServerSettings
from inferd.dialects.abeja.settings import AbejaSettings
from inferd.dialects.deepaas.settings import DeepaasSettings
from inferd.dialects.graph.settings import GraphSettings
from inferd.dialects.repository.settings import RepositorySettings
from inferd.dialects.runtimes.settings import RuntimeSettings
from inferd.dialects.seldon.settings import SeldonSettings

#: The classes whose fields `Settings` gathers, in the order the reference lists them: the server's,
#: then each dialect's own (native and Cortex models read only what every dialect reads).
PARTS = (
    ServerSettings,
    SeldonSettings,
    GraphSettings,
    DeepaasSettings,
    AbejaSettings,
    RepositorySettings,
    RuntimeSettings,
)


class Settings(
    ServerSettings,
    SeldonSettings,
    GraphSettings,
    DeepaasSettings,
    AbejaSettings,
    RepositorySettings,
    RuntimeSettings,
):
    """The server's settings and every dialect's; a new dialect's settings class is added here."""

    model_config = ServerSettings.model_config
