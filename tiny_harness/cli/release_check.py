"""``helm test``'s check of an installed release, run in a pod from the chart's own image.

The chart's test hook runs ``python -m tiny_harness.cli.release_check`` inside the cluster and
checks the release as the node tests do: the gateway's Service answers with the agent card,
which advertises the URL the release was given, and the operator is ready, which its metrics
Service shows (a Service routes only to pods whose readiness probe passes) by answering with the
operator's own metrics. Each check is tried until it passes or ``--within`` seconds are up, so
a ``helm test`` right after ``helm install`` waits out the rollout; a check that fails says
what did not answer and what it got. The standard library is all it uses.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

#: What proves the operator answered, not some other server: a metric only it exports.
OPERATOR_METRIC: Final = "tiny_harness_turns_started_total"
AGENT_CARD: Final = "/.well-known/agent-card.json"
#: How long one request may take, and how long to wait between tries.
REQUEST_SECONDS: Final = 5.0
RETRY_SECONDS: Final = 2.0


class CheckFailedError(Exception):
    """A check did not pass; the message says what answered, or did not."""


def _get(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=REQUEST_SECONDS) as resp:
            return str(resp.read().decode("utf-8", "replace"))
    except urllib.error.HTTPError as exc:
        raise CheckFailedError(f"{url} answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise CheckFailedError(f"{url} did not answer: {reason}") from None


def _urls(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "url" and isinstance(value, str):
                yield value
            yield from _urls(value)
    elif isinstance(node, list):
        for value in node:
            yield from _urls(value)


def check_gateway(gateway: str, advertised: str | None) -> str:
    """The agent card, served by the gateway, naming the URL the release advertises."""
    url = gateway.rstrip("/") + AGENT_CARD
    try:
        card = json.loads(_get(url))
    except json.JSONDecodeError as exc:
        raise CheckFailedError(f"{url} is not JSON: {exc}") from None
    if not isinstance(card, dict) or not card.get("name"):
        raise CheckFailedError(f"{url} is not an agent card (no name)")
    urls = list(_urls(card))
    if advertised is not None and not any(u.startswith(advertised.rstrip("/")) for u in urls):
        raise CheckFailedError(
            f"the agent card at {url} advertises {', '.join(urls) or 'no URL'}, "
            f"not {advertised} (gateway.baseUrl)"
        )
    return f"gateway: the agent card of {card['name']!r} at {url}"


def check_operator(metrics: str) -> str:
    """The operator's metrics, through its Service: some replica is ready and answers."""
    url = metrics.rstrip("/") + "/metrics"
    if OPERATOR_METRIC not in _get(url):
        raise CheckFailedError(f"{url} answered without {OPERATOR_METRIC}: not the operator")
    return f"operator: ready, its metrics answer at {url}"


def within(check: Callable[[], str], seconds: float, clock: Callable[[], float]) -> str:
    """``check``'s result, tried until it passes or ``seconds`` are up (then its last error)."""
    deadline = clock() + seconds
    while True:
        try:
            return check()
        except CheckFailedError:
            if clock() + RETRY_SECONDS > deadline:
                raise
        time.sleep(RETRY_SECONDS)


def main(argv: Sequence[str] | None = None, *, clock: Callable[[], float] = time.monotonic) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tiny_harness.cli.release_check",
        description="Check an installed tiny-harness release (the chart's helm test).",
    )
    parser.add_argument("--gateway", metavar="URL", help="the gateway's Service URL")
    parser.add_argument("--advertised", metavar="URL", help="the URL its agent card must advertise")
    parser.add_argument(
        "--operator-metrics", metavar="URL", help="the operator's metrics Service URL"
    )
    parser.add_argument(
        "--within", type=float, default=60.0, metavar="SECONDS", help="how long to keep trying"
    )
    args = parser.parse_args(argv)
    checks: list[Callable[[], str]] = []
    if args.gateway:
        checks.append(lambda: check_gateway(args.gateway, args.advertised))
    if args.operator_metrics:
        checks.append(lambda: check_operator(args.operator_metrics))
    else:
        print("operator: not checked (operator.metrics.enabled is false: no Service to ask)")
    failed = False
    for check in checks:
        try:
            print(within(check, args.within, clock), flush=True)
        except CheckFailedError as exc:
            print(f"FAILED: {exc}", flush=True)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
