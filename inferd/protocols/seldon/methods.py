"""Seldon's message methods as the wire names them: the user class's method, its microservice REST
path, and the value of the ``method`` label on Seldon's Prometheus series (spec §2, §9)."""

from __future__ import annotations

PREDICT = "predict"
TRANSFORM_INPUT = "inputtransform"
TRANSFORM_OUTPUT = "outputtransform"
ROUTE = "router"
AGGREGATE = "aggregate"
FEEDBACK = "feedback"
HEALTH = "health"

#: The microservice REST path of each message method.
PATHS = {
    "predict": "/predict",
    "transform_input": "/transform-input",
    "transform_output": "/transform-output",
    "route": "/route",
    "aggregate": "/aggregate",
    "send_feedback": "/send-feedback",
}
#: The ``method`` label of each message method.
LABELS = {
    "predict": PREDICT,
    "transform_input": TRANSFORM_INPUT,
    "transform_output": TRANSFORM_OUTPUT,
    "route": ROUTE,
    "aggregate": AGGREGATE,
    "send_feedback": FEEDBACK,
}
