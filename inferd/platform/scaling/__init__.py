"""Autoscaling of local services: `Recommender` turns one service's load (requests in flight at the
data path, over a window) into the replicas it should run, held steady by stabilisation periods;
`Autoscaler` samples the data path for every service and has the platform scale them."""

from inferd.platform.scaling.autoscaler import Autoscaler
from inferd.platform.scaling.policy import Recommender, ScalePolicy

__all__ = ["Autoscaler", "Recommender", "ScalePolicy"]
