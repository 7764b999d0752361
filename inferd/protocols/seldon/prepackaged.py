"""Seldon's prepackaged servers by ``implementation`` name: the ones inferd runs (as a Seldon class,
named by an import string so that only a graph using one imports it) and the ones it refuses, with
why. Here because both the graph dialect (which reads the names) and the Seldon dialect (which holds
the classes) speak of them, and neither imports the other."""

from __future__ import annotations

from typing import NamedTuple


class Server(NamedTuple):
    #: The Seldon component class serving it (``module:Class``).
    target: str
    #: The image Seldon runs it in: what ``meta.requestPath`` names the node by.
    image: str


RUNS = {
    "SKLEARN_SERVER": Server("inferd.dialects.seldon.prepackaged:SKLearnServer", "seldonio/sklearnserver"),
    "XGBOOST_SERVER": Server("inferd.dialects.seldon.prepackaged:XGBoostServer", "seldonio/xgboostserver"),
    "LIGHTGBM_SERVER": Server("inferd.dialects.seldon.prepackaged:LightGBMServer", "seldonio/lightgbmserver"),
    "TENSORFLOW_SERVER": Server(
        "inferd.dialects.seldon.prepackaged_models:TensorflowServer", "seldonio/tfserving-proxy"
    ),
    "MLFLOW_SERVER": Server(
        "inferd.dialects.seldon.prepackaged_models:MLFlowServer", "seldonio/mlflowserver"
    ),
    "TRITON_SERVER": Server(
        "inferd.dialects.seldon.prepackaged_triton:TritonServer", "nvcr.io/nvidia/tritonserver"
    ),
}
#: Prepackaged servers inferd cannot run, and what to do instead.
REFUSED = {
    "MLSERVER": "MLServer's runtimes",
    "HUGGINGFACE_SERVER": "a Hugging Face pipeline",
    "TEMPO_SERVER": "a Tempo pipeline",
}


def refusal(implementation: str) -> str:
    """Why a node with ``implementation`` (one of `REFUSED`) cannot run, and what would."""
    return (
        f"implementation {implementation!r} is Seldon's prepackaged server for {REFUSED[implementation]}, "
        f"which inferd cannot run (of the prepackaged servers it runs {sorted(RUNS)}); serve the model "
        "with inferd code instead: a node 'target' (or a componentSpecs container's MODEL_NAME) naming "
        "a Seldon class or an inferd model, or an 'endpoint' with service_host to call"
    )
