"""The chart's identity policy is written from the rules in ``kube/admission.py``: a rule
changed there and not written to the chart would leave a cluster enforcing the old one."""

from __future__ import annotations

from tiny_harness.kube.admission import CHART_TEMPLATE, chart_template


def test_the_charts_policy_template_is_the_one_the_rules_write() -> None:
    assert CHART_TEMPLATE.read_text() == chart_template(), (
        "stale chart template: run python -m tiny_harness.kube.admission --write"
    )
