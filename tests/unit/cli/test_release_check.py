"""The chart's ``helm test`` check against a gateway and an operator served on loopback: what
passes, and what each failure says."""

from __future__ import annotations

import itertools

import pytest

from tests.release_check_support import serving
from tiny_harness.cli import release_check
from tiny_harness.cli.release_check import main


def test_a_release_whose_gateway_and_operator_answer_passes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with serving() as (gateway, metrics):
        code = main(["--gateway", gateway, "--advertised", gateway, "--operator-metrics", metrics])

    out = capsys.readouterr().out
    assert code == 0, out
    assert out.splitlines() == [
        f"gateway: the agent card of 'tiny-harness' at {gateway}/.well-known/agent-card.json",
        f"operator: ready, its metrics answer at {metrics}/metrics",
    ]


def test_a_card_advertising_another_url_fails_naming_both(
    capsys: pytest.CaptureFixture[str],
) -> None:
    card = {"name": "tiny-harness", "supportedInterfaces": [{"url": "http://elsewhere:1/"}]}
    with serving(card=card) as (gateway, _):
        code = main(["--gateway", gateway, "--advertised", "http://th.example", "--within", "0"])

    out = capsys.readouterr().out
    assert code == 1
    assert "advertises http://elsewhere:1/, not http://th.example (gateway.baseUrl)" in out


def test_metrics_that_are_not_the_operators_fail(capsys: pytest.CaptureFixture[str]) -> None:
    with serving(metrics="# some other exporter\n") as (_, metrics):
        code = main(["--operator-metrics", metrics, "--within", "0"])

    assert code == 1
    assert "without tiny_harness_turns_started_total: not the operator" in capsys.readouterr().out


def test_a_check_is_tried_until_its_time_is_up_then_says_what_did_not_answer(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ticks = itertools.count(0, release_check.RETRY_SECONDS)
    slept: list[float] = []
    monkeypatch.setattr(release_check.time, "sleep", slept.append)

    code = main(
        ["--operator-metrics", "http://127.0.0.1:9", "--within", "10"],
        clock=lambda: float(next(ticks)),
    )

    assert code == 1
    assert len(slept) == 4  # tried at 0, 2, 4, 6 and 8 seconds
    out = capsys.readouterr().out
    assert "FAILED: http://127.0.0.1:9/metrics did not answer" in out


def test_without_a_metrics_service_the_operator_is_said_to_be_unchecked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([]) == 0
    assert capsys.readouterr().out.startswith("operator: not checked")
