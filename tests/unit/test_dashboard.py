"""The chart's Grafana dashboard asks only for metrics the operator and the gateway export."""

from __future__ import annotations

import json
import re

from prometheus_client import CollectorRegistry

from tiny_harness.a2a_gateway.metrics import GatewayMetrics
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.operator.metrics import OperatorMetrics

DASHBOARD = REPO_ROOT / "charts/tiny-harness/dashboards/tiny-harness.json"
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}


def exported(registry: CollectorRegistry) -> set[str]:
    """Every series name the registry serves, labelled families with no sample yet included."""
    names: set[str] = set()
    for family in registry.collect():
        names.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ("",)))
    return names


def queries() -> list[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [
        (panel["title"], target["expr"])
        for panel in dashboard["panels"]
        for target in panel["targets"]
    ]


def test_every_query_names_a_metric_the_project_exports() -> None:
    available = exported(OperatorMetrics().registry) | exported(GatewayMetrics().registry)
    asked = {
        (title, name)
        for title, expr in queries()
        for name in re.findall(r"\btiny_harness_[a-z_]+", expr)
    }

    assert asked, "the dashboard asks for nothing"
    assert {(title, name) for title, name in asked if name not in available} == set()


def test_every_panel_has_a_query_and_every_exported_family_is_shown() -> None:
    families = {
        family.name
        for registry in (OperatorMetrics().registry, GatewayMetrics().registry)
        for family in registry.collect()
    }
    shown = " ".join(expr for _, expr in queries())

    assert all(expr.strip() for _, expr in queries())
    assert {f for f in families if f not in shown} == set()
