"""The Grafana dashboard and the Prometheus alert rules in ``docs/observability/`` hold to what inferd
exports: every metric their PromQL names is on the ``/metrics`` of a running server (``inferd serve``
of the iris example, a graph whose node's code is fetched over HTTP, and the platform's control
process with an endpoint in front of a service), with the label names the expressions use. The
dashboard is a valid one (panels with targets, unique ids, its variables), and the rules file parses
with the keys Prometheus wants and passes ``promtool check rules`` (as do the dashboard's
expressions, the Grafana variables replaced)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

import inferd.core.metrics
import inferd.dialects.graph.metrics
import inferd.platform.gateway.metrics  # noqa: F401 (their families: inferd's own, or on REGISTRY)
from inferd.core import counters
from tests.dialects.graph.conftest import COMPONENTS
from tests.platform.control import Control, control, native_project
from tests.servers import ROOT, serve
from tests.storage.files_server import file_server

FOLDER = ROOT / "docs" / "observability"
DASHBOARD = FOLDER / "grafana-inferd.json"
ALERTS = FOLDER / "alerts.yaml"
IRIS = {"inputs": [{"name": "input-0", "shape": [1, 4], "datatype": "FP32", "data": [[5.1, 3.5, 1.4, 0.2]]}]}
#: Labels Prometheus adds to every series it scrapes, and the histogram's bucket bound.
TARGET_LABELS = {"instance", "job"}
SUFFIXES = ("_bucket", "_count", "_sum")
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless"}
KEYWORDS |= {"offset", "inf", "nan"}
GRAFANA = {"$__rate_interval": "5m", "$__range": "1h", "$__interval": "1m", "$model": ".*", "$instance": ".*"}


@dataclass
class Use:
    """One metric an expression names, and the label names the expression uses with it."""

    metric: str
    labels: set[str] = field(default_factory=set)


def uses(expr: str) -> Use:
    """The metric ``expr`` names (each expression names one, so its labels are that metric's) and the
    label names of its matchers and of its ``by``/``without``/``on``/``ignoring`` clauses."""
    labels = set()
    for grouping in re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", expr):
        labels |= {name.strip() for name in grouping.split(",") if name.strip()}
    for matchers in re.findall(r"\{([^}]*)\}", expr):
        labels |= set(re.findall(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)", matchers))
    bare = re.sub(r'"[^"]*"', "", expr)
    bare = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", bare)
    bare = re.sub(r"\b(?:by|without|on|ignoring)\s*\([^)]*\)", "", bare)
    names = {
        name
        for name, call in re.findall(r"(?<![\w$.])([a-zA-Z_:][\w:]*)(\s*\()?", bare)
        if not call and name not in KEYWORDS  # a function or an aggregation is followed by "("
    }
    assert len(names) == 1, f"{expr!r} names {sorted(names)}: one metric per expression"
    (name,) = names
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            name = name.removesuffix(suffix)
    return Use(name, labels)


def dashboard_exprs() -> list[str]:
    found = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in found["panels"] for target in panel.get("targets", [])]


def alert_exprs() -> list[str]:
    found = yaml.safe_load(ALERTS.read_text())
    return [rule["expr"] for group in found["groups"] for rule in group["rules"]]


def expressions() -> list[str]:
    """Every PromQL expression of the dashboard (a ratio split in its two sides, each naming one
    metric) and of the alert rules."""
    found = []
    for expr in [*dashboard_exprs(), *alert_exprs()]:
        found += [side for side in re.split(r"\)\s*/\s*(?=sum)", expr)]
    return found


# --- the documents themselves -----------------------------------------------------------------------


def test_the_dashboard_is_a_grafana_dashboard() -> None:
    found = json.loads(DASHBOARD.read_text())
    assert found["schemaVersion"] >= 36 and found["title"] and found["uid"]
    variables = {variable["name"]: variable for variable in found["templating"]["list"]}
    assert (
        variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    )
    for name in ("model", "instance"):
        assert variables[name]["type"] == "query"
        assert variables[name]["definition"].startswith("label_values(")
        assert variables[name]["datasource"]["uid"] == "${datasource}"
    ids = [panel["id"] for panel in found["panels"]]
    assert len(ids) == len(set(ids))
    graphs = [panel for panel in found["panels"] if panel["type"] != "row"]
    assert len(graphs) >= 12
    for panel in graphs:
        assert panel["title"] and panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"] and all(target["expr"] and target["refId"] for target in panel["targets"])
        assert len({target["refId"] for target in panel["targets"]}) == len(panel["targets"])
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and grid["h"] > 0
    used = {uses(expr).metric for expr in expressions()}
    assert {
        "inferd_requests_total",
        "inferd_request_duration_seconds",
        "inferd_requests_in_flight",
        "inferd_model_loads_total",
        "inferd_model_unloads_total",
        "inferd_model_fetches_total",
        "inferd_model_fetched_bytes_total",
        "inferd_worker_restarts_total",
        "inferd_graph_node_duration_seconds",
        "inferd_gateway_requests_total",
        "inferd_gateway_shadow_dropped_total",
    } <= used
    quantiles = [expr for expr in dashboard_exprs() if "inferd_request_duration_seconds_bucket" in expr]
    assert {re.search(r"histogram_quantile\((0\.\d+)", expr)[1] for expr in quantiles} == {
        "0.5",
        "0.9",
        "0.99",
    }  # type: ignore[index]


def test_the_alert_rules_have_what_prometheus_wants() -> None:
    found = yaml.safe_load(ALERTS.read_text())
    names = []
    for group in found["groups"]:
        assert group["name"] and group["rules"]
        for rule in group["rules"]:
            assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}, rule
            assert re.fullmatch(r"\d+[smh]", rule["for"]), rule
            assert rule["labels"]["severity"] in {"critical", "warning", "info"}
            assert rule["annotations"]["summary"] and rule["annotations"]["description"]
            names.append(rule["alert"])
    assert len(names) == len(set(names))


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed (make browser)")
def test_promtool_checks_the_rules_and_the_dashboards_queries(tmp_path: Path) -> None:
    checked = subprocess.run(["promtool", "check", "rules", str(ALERTS)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # the dashboard's queries, as recording rules once Grafana's variables are replaced
    rules = []
    for number, expr in enumerate(dashboard_exprs()):
        for variable, value in GRAFANA.items():
            expr = expr.replace(variable, value)
        assert "$" not in expr, expr
        rules.append({"record": f"dashboard:query_{number}", "expr": expr})
    queries = tmp_path / "queries.yaml"
    queries.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    checked = subprocess.run(["promtool", "check", "rules", str(queries)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


# --- against running servers ------------------------------------------------------------------------


@dataclass
class Exported:
    """What the scraped ``/metrics`` of the running servers say: the families each names (with or
    without samples) and the label names of their samples."""

    families: set[str] = field(default_factory=set)
    labels: dict[str, set[str]] = field(default_factory=dict)

    def add(self, exposition: str) -> None:
        for family in text_string_to_metric_families(exposition):
            self.families.add(family.name)
            for sample in family.samples:
                names = set(sample.labels) - {"le"}
                self.labels.setdefault(family.name, set()).update(names)


def declared(name: str) -> set[str]:
    """The label names the collector of ``name`` declares (the same object the servers register),
    for a family a scrape shows without samples (an event the test does not cause): one of inferd's
    own families (`inferd.core.counters`) or a prometheus_client metric."""
    for family in counters.FAMILIES.families:
        if family.name in (name, name.removesuffix("_total")):
            return set(family.labelnames)
    for collector, names in REGISTRY._collector_to_names.items():
        if name in names or f"{name}_total" in names:
            return set(collector._labelnames)  # type: ignore[attr-defined]
    raise AssertionError(f"{name} is declared by no collector")


def scrape(url: str, **options: Any) -> str:
    answer = httpx.get(url + "/metrics", timeout=10, **options)
    assert answer.status_code == 200, answer.text
    return answer.text


def project(folder: Path) -> Path:
    return native_project(
        folder,
        "scale",
        """
            import inferd

            class Scale(inferd.Model):
                def predict(self, inputs):
                    return {"y": inputs["x"] * 2}
        """,
    )


def wait_running(running: Control, service: str) -> None:
    deadline = time.monotonic() + 60
    while (found := running.call("GET", f"/services/{service}").json())["state"] != "running":
        assert time.monotonic() < deadline, found
        time.sleep(0.2)


def platform_exposition(tmp_path: Path) -> str:
    """The control process's ``/metrics`` after two requests through an endpoint: one answered, one
    the model fails on (no input ``x``: a 500, passed on as it is)."""
    with control(tmp_path / "data") as running:
        assert running.verb("create-deployment", "dash").returncode == 0
        pushed = running.verb("push", "dash", str(project(tmp_path / "p")), "--label", "1", "--json")
        assert pushed.returncode == 0, pushed.stderr
        created = running.call(
            "POST", "/deployments/dash/services", json={"version": json.loads(pushed.stdout)["id"]}
        )
        assert created.status_code == 201, created.text
        service = created.json()["id"]
        wait_running(running, service)
        assert running.verb("route", "dash", "main", f"{service}=100").returncode == 0
        url = f"{running.gateway}/e/main/v2/models/scale/infer"
        good = {"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1.0]}]}
        assert httpx.post(url, json=good, timeout=30).status_code == 200
        assert httpx.post(url, json={"inputs": []}, timeout=30).status_code == 500
        return scrape(running.base, headers=running.headers)


def server_expositions(tmp_path: Path) -> Iterator[str]:
    """The ``/metrics`` of iris (requests answered and failed, a model unloaded) and of a graph whose
    node's code is fetched from an HTTP store (node latency, a download and its bytes)."""
    with serve(str(ROOT / "examples" / "iris")) as iris, iris.http() as http:
        (model,) = iris.models
        assert http.post(f"/v2/models/{model}/infer", json=IRIS).status_code == 200
        assert http.post(f"/v2/models/{model}/infer", json={"inputs": []}).status_code == 400
        yield scrape(iris.http_url)
        http.post(f"/v2/repository/models/{model}/unload")
        yield scrape(iris.http_url)
    with file_server() as files:
        code = files.put("/nodes/Doubler.py", (COMPONENTS / "Doubler.py").read_bytes())
        graph = tmp_path / "graph.yaml"
        graph.write_text(f"name: fetched\ngraph:\n  name: double\n  type: MODEL\n  target: {code}:Doubler\n")
        with serve(str(graph), "--data-dir", str(tmp_path / "graph-data")) as server:
            answer = httpx.post(
                f"{server.http_url}/api/v1.0/predictions", json={"data": {"ndarray": [[1, 2]]}}
            )
            assert answer.status_code == 200, answer.text
            yield scrape(server.http_url)


def test_every_metric_referenced_is_exported_with_its_labels(tmp_path: Path) -> None:
    exported = Exported()
    for exposition in server_expositions(tmp_path):
        exported.add(exposition)
    exported.add(platform_exposition(tmp_path))
    # what the test caused, so the labels below come from samples, not declarations
    for caused in (
        "inferd_requests",
        "inferd_request_duration_seconds",
        "inferd_model_loads",
        "inferd_model_fetches",
        "inferd_model_fetched_bytes",
        "inferd_graph_node_duration_seconds",
        "inferd_gateway_requests",
    ):
        assert caused in exported.labels, f"{caused} has no samples"
    for expr in expressions():
        use = uses(expr)
        family = use.metric.removesuffix("_total")
        assert family in exported.families, f"{use.metric} ({expr!r}) is not on any server's /metrics"
        labels = exported.labels.get(family) or declared(use.metric)
        unknown = use.labels - labels - TARGET_LABELS - {"le"}
        assert not unknown, f"{use.metric} has no label {sorted(unknown)} ({expr!r}); it has {sorted(labels)}"
