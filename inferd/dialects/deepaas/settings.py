"""The DEEPaaS dialect's own settings (besides what every dialect reads), with DEEPaaS's option
names (``--model-name``, ``--base-path``, ``--nowarm``...) as ``serve``'s options."""

from __future__ import annotations

from inferd.core.settings import DialectSettings

#: The built-in test model's name (``--model-name deepaas-test``), here for modules that must not import
#: `test_model` (and marshmallow with it) before a DEEPaaS model is served.
TEST_MODEL = "deepaas-test"


class DeepaasSettings(DialectSettings):
    """Which entry point is served, where, and which of DEEPaaS's routes are on."""

    model_name: str | None = None
    """DEEPaaS ``--model-name``: the one entry point of ``deepaas.v2.model`` to serve (all when unset;
    ``deepaas-test`` is the built-in test model). ``DEEPAAS_V2_MODEL`` sets it too."""

    base_path: str = ""
    """DEEPaaS ``--base-path``: a prefix (starting with ``/``) for every DEEPaaS route."""

    predict_endpoint: bool = True
    """DEEPaaS predict routes; off, they answer 402 Payment Required (``--nopredict-endpoint``)."""

    train_endpoint: bool = True
    """DEEPaaS training routes; off, they answer 402 Payment Required (``--notrain-endpoint``)."""

    doc_endpoint: bool = True
    """The Swagger UI at ``/api`` (DEEPaaS); off, ``/api`` and ``/ui`` are 404 (``--nodoc-endpoint``)."""

    warm: bool = True
    """Call a DEEPaaS model's ``warm()`` in each worker before it reports ready (``--nowarm``)."""
