"""The settings of ``inferd platform serve``: the server's (where the control API listens, tokens,
origins, hosts, body and upload limits, data folder) and the platform's own, read like every other
setting from ``INFERD_*`` variables."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, field_validator
from pydantic_settings import NoDecode

from inferd.core.settings import ServerSettings


class PlatformSettings(ServerSettings):
    """The control process: its API on ``port``, its endpoints' gateway on ``gateway_port``."""

    port: int = Field(8070, ge=0, le=65535)
    """Port of the control API (``/platform/v1``) and the console page."""

    gateway_port: int = Field(8000, ge=0, le=65535)
    """Port of the gateway: endpoint ``NAME`` answers under ``/e/NAME/``."""

    grpc_gateway_port: int = Field(8001, ge=0, le=65535)
    """Port of the gateway's gRPC side: a call goes to the endpoint its ``inferd-endpoint`` metadata
    names (or the only one); 0 picks a free port (the ready line shows it)."""

    data_path: Literal["gateway", "haproxy"] = "gateway"
    """What carries the endpoints' requests: the embedded gateway, or HAProxy (Debian's package),
    its weights changed through its runtime API without a reload; shadow traffic is the gateway's
    only."""

    artifact_store: str | None = None
    """A storage prefix (``s3://bucket/bundles/``, ``gs://...``) that keeps every version bundle,
    uploaded once when it is pushed; the data folder's copy is then a cache, filled from it when a
    service or run needs a bundle this machine lacks. Unset: the data folder only."""

    max_bundle_size: int = Field(512 * 1024 * 1024, ge=1)
    """Largest version archive (bytes) an upload may hold, packed or unpacked; also the largest file
    uploaded to a channel of the ABEJA-compatible DataLake API."""

    max_archive_header_size: int = Field(64 * 1024, ge=512)
    """Largest header (bytes) of an uploaded tar that carries a member's long name or link (GNU ``L``,
    ``K``) or its PAX records (``x``, ``g``): a larger one is refused (413) before it is read, as
    Python's ``tarfile`` reads such a header whole. Every header's bytes count against
    ``max_bundle_size`` unpacked."""

    max_archive_metadata_size: int = Field(16 * 1024 * 1024, ge=1024)
    """Largest total (bytes) of an uploaded tar's long-name and PAX headers, or of an uploaded zip's
    central directory: what the archive readers hold in memory of it (413 past it). A zip's entry
    count is read from its end-of-central-directory record and its entries counted before the
    directory is parsed."""

    max_api_body_size: int = Field(1024 * 1024, ge=1)
    """Largest body (bytes) of a control API request other than an archive upload (those take
    ``max_bundle_size``) or an inference through the ABEJA-compatible data path (``max_body_size``)."""

    autoscale_interval: float = Field(1.0, gt=0)
    """How often the autoscaler samples the requests each service's replicas hold at the data path."""

    autoscale_window: float = Field(60.0, gt=0)
    """Seconds of samples a service's load is averaged over (Cortex's ``window``)."""

    autoscale_upscale_delay: float = Field(0.0, ge=0)
    """A service scales up to the lowest replica count recommended over this many seconds
    (Cortex's ``upscale_stabilization_period``); 0 scales up on the first recommendation."""

    autoscale_downscale_delay: float = Field(300.0, ge=0)
    """A service scales down only to the highest replica count recommended over this many seconds,
    and not before it was watched that long (Cortex's ``downscale_stabilization_period``)."""

    console_sample_interval: float = Field(10.0, ge=0.1, le=600)
    """Seconds between two points of the console's traffic charts (requests per second, p50 and p99
    latency of each service and endpoint); an hour of points is kept in the control process's memory."""

    service_stop_grace: float = Field(30.0, ge=0)
    """How long a stopped service may take to answer what it holds before it is killed."""

    trigger_poll_seconds: float = Field(2.0, gt=0)
    """How often each enabled trigger's input folder or storage prefix is looked at for new files."""

    max_parallel_runs: int = Field(4, ge=1)
    """Runs that go at once; the others wait, ``pending``."""

    max_processes: int = Field(default_factory=lambda: max(16, 4 * (os.cpu_count() or 1)), ge=1)
    """Most processes the control process runs for its services and runs together: each live local
    service's replicas times its processes (``workers``, plus a supervisor when ``workers`` > 1 or
    the model is isolated), a Ray service's ``workers`` + 1, and one per running run. A service
    created, started or scaled past it, or a run submitted past it, is refused (409, naming the
    budget, what is in use and this setting); the autoscaler stops at it. Default: 4 per CPU core,
    at least 16."""

    run_timeout: float = Field(24 * 3600.0, gt=0)
    """Seconds a run may take from its start (once a slot is free) before it is stopped and marked
    ``failed`` ("timed out after N s"); a run may ask for less or more with its own ``timeout``."""

    platform_open: bool = False
    """Run the control API, its console and its ABEJA-compatible API without a token when
    ``auth_tokens`` is empty (``--no-token``): every process and user of this machine may then deploy
    and run code. Unset, a token is generated at the first start, kept in
    ``DATA_DIR/platform/control-token`` (mode 0600) and taken by the ``inferd`` CLI on its own."""

    runtime_dir: Path | None = None
    """Where a control process records which token file its port takes, for the ``inferd`` CLI of the
    same user to find (removed when it stops). Unset: ``$XDG_RUNTIME_DIR/inferd``, else
    ``~/.local/share/inferd/runtime``."""

    abeja_datalake_dir: Path | None = None
    """The folder standing for ABEJA's DataLake in the ABEJA-compatible API's runs and triggers:
    channel ``C`` is the folder ``C`` in it, its file ``F`` the file ``C/F``. Unset: ``platform/datalake``
    in ``data_dir``."""

    abeja_training_max_jobs: int = Field(2, ge=1)
    """ABEJA training jobs that run at once; the others wait ``Pending``. Each running job is one
    process of ``max_processes``: a job past that budget is refused (409)."""

    abeja_training_timeout: float = Field(24 * 3600.0, gt=0)
    """Seconds an ABEJA training job may run (from ``Active``) before its process is ended and the job
    marked ``Failed`` ("timed out")."""

    abeja_training_pythons: dict[str, str] = Field(default_factory=dict)
    """The Python that runs an ABEJA training job, by its version's ``image``: a JSON object such as
    ``{"abeja-inc/all-cpu:19.10": "/opt/abeja-venv/bin/python"}`` (a venv with ``abeja-sdk`` and the
    job's packages), ``"*"`` for every image not listed. Unset (or an image not listed and no
    ``"*"``): the control process's own Python."""

    allowed_outside_targets: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Where a version's ``target`` may point besides its own bundle: folders of this machine
    (``/srv/shared-models/``), storage URI prefixes (``s3://bucket/models/``: a KServe
    ``storageUri``), or ``*`` for anywhere. Empty: a version whose target leaves its bundle
    (``../other/model.py``, an absolute path, ``file://``, any storage URI) is refused with 400 and
    nothing is recorded, so what a service runs is the content its version's digest names.
    ``INFERD_ALLOWED_OUTSIDE_TARGETS``, comma-separated or a JSON list."""

    @field_validator("allowed_outside_targets", mode="before")
    @classmethod
    def _split_locations(cls, value: Any) -> Any:
        """A list from the environment as a JSON list or comma-separated; empty entries are dropped."""
        return cls._split_list(value)

    #: The token generated at start when ``auth_tokens`` is empty (`inferd.platform.admin_token`).
    _generated_token: str | None = PrivateAttr(default=None)

    def control_tokens(self) -> list[str]:
        """The tokens the control API, the console and the ABEJA-compatible API take: ``auth_tokens``,
        else the generated one, else none (``platform_open``). The gateway and the services take
        ``auth_tokens`` alone."""
        if self.auth_tokens:
            return [token.get_secret_value() for token in self.auth_tokens]
        return [self._generated_token] if self._generated_token else []

    def with_generated_token(self, token: str) -> PlatformSettings:
        """These settings with ``token`` as the control API's when ``auth_tokens`` is empty."""
        copied = self.model_copy()
        copied._generated_token = token
        return copied
