"""Token review done right: every TokenReview the gateway makes is work the API server does for
a caller nobody knows yet, so it is rationed, and a token can be one made for the gateway alone.

The TokenReviews are counted where they land, in the API server's own /metrics
(``apiserver_request_total{resource="tokenreviews"}``, read as the admin), so what is asserted is
what the API server did, not what the gateway says it did. Each gateway here runs as the
chart's ServiceAccount, with the chart's settings, on loopback.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.eventually import eventually
from tests.integration.gateway_support import A2AUser, GatewayProcess, Replicas, kubectl
from tiny_harness.kube.client import HarnessTasks

pytestmark = pytest.mark.controlplane

A2A_HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
LIST_TASKS = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
PUBLIC_PATHS = (
    "/healthz",
    "/.well-known/agent-card.json",
    "/metrics",
    "/a2a/ext/task.json",
    "/ui/",
    "/ui/config.json",
)
GATEWAY_AUDIENCE = "tiny-harness-gateway"
_TOKEN_REVIEWS = re.compile(r'^apiserver_request_total\{[^}]*resource="tokenreviews"[^}]*\} (\S+)$')


@pytest.fixture(scope="module")
def namespace(kubeconfig: Path) -> str:
    name = f"reviews-{uuid.uuid4().hex[:8]}"
    kubectl(kubeconfig, "create", "namespace", name)
    return name


@pytest.fixture(scope="module")
def replicas(
    kubeconfig: Path, namespace: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Replicas]:
    started = Replicas(kubeconfig, namespace, tmp_path_factory.mktemp("gateways"))
    yield started
    started.stop()


def token_reviews(admin: Path) -> int:
    """TokenReviews the API server has answered since it started, by its own metrics."""
    scraped = kubectl(admin, "get", "--raw", "/metrics")
    return sum(
        int(float(m.group(1)))
        for m in (_TOKEN_REVIEWS.match(line) for line in scraped.splitlines())
        if m
    )


def account_token(admin: Path, namespace: str, account: str, *audience: str) -> str:
    """A bound token for the ServiceAccount ``account`` (created on first use)."""
    found = subprocess.run(
        ["kubectl", f"--kubeconfig={admin}", "-n", namespace, "get", "serviceaccount", account],
        capture_output=True,
        timeout=60,
    )
    if found.returncode != 0:
        kubectl(admin, "-n", namespace, "create", "serviceaccount", account)
    flags = [f"--audience={a}" for a in audience]
    return kubectl(admin, "-n", namespace, "create", "token", account, *flags).strip()


async def list_tasks(http: httpx.AsyncClient, replica: GatewayProcess, token: str) -> Any:
    return await http.post(
        f"{replica.url}/",
        json=LIST_TASKS,
        headers={**A2A_HEADERS, "Authorization": f"Bearer {token}"},
    )


def random_bearer() -> str:
    return secrets.token_urlsafe(32)


async def test_a_thousand_random_bearers_on_public_paths_cost_no_token_review(
    replicas: Replicas, kubeconfig: Path
) -> None:
    replica = replicas(participant_identity="tokenreview")
    async with httpx.AsyncClient(base_url=replica.url, timeout=30) as http:
        plain = {path: (await http.get(path)).status_code for path in PUBLIC_PATHS}
        before = token_reviews(kubeconfig)

        answered: list[tuple[str, int]] = []
        for n in range(1000):
            path = PUBLIC_PATHS[n % len(PUBLIC_PATHS)]
            got = await http.get(path, headers={"Authorization": f"Bearer {random_bearer()}"})
            answered.append((path, got.status_code))
        after = token_reviews(kubeconfig)
        # The counter is the right one: a bearer on an A2A path is one TokenReview.
        refused = await http.post("/", json=LIST_TASKS, headers={"Authorization": "Bearer x"})
        counted = eventually(
            lambda: token_reviews(kubeconfig) == after + 1,
            within=20,
            what="the one TokenReview counted",
        )

    assert answered == [(path, plain[path]) for path, _ in answered]
    assert after == before
    assert refused.status_code == 401
    assert counted


async def test_random_bearers_are_refused_401_then_429_and_reviews_stop_at_the_limit(
    replicas: Replicas, kubeconfig: Path
) -> None:
    limit = 5
    replica = replicas(participant_identity="tokenreview", auth_failures_per_minute=limit)
    before = token_reviews(kubeconfig)
    started = time.monotonic()

    async with httpx.AsyncClient(timeout=30) as http:
        # Each claims another client address: the gateway counts the peer, not the header.
        answers = [
            await http.post(
                f"{replica.url}/",
                json=LIST_TASKS,
                headers={
                    **A2A_HEADERS,
                    "Authorization": f"Bearer {random_bearer()}",
                    "X-Forwarded-For": f"198.51.100.{n}",
                },
            )
            for n in range(60)
        ]
    elapsed = time.monotonic() - started
    unauthorized = [a for a in answers if a.status_code == 401]
    eventually(
        lambda: token_reviews(kubeconfig) - before >= len(unauthorized),
        within=20,
        what="the API server to count the reviews",
    )
    refill = int(elapsed * limit / 60)  # the bucket refills evenly while the test runs

    assert [a.status_code for a in answers[:limit]] == [401] * limit
    assert {a.status_code for a in answers} == {401, 429}
    assert len(unauthorized) <= limit + refill
    assert all("refused by Kubernetes" in a.json()["error"]["message"] for a in unauthorized)
    assert token_reviews(kubeconfig) - before == len(unauthorized)
    limited = next(a for a in answers if a.status_code == 429)
    assert int(limited.headers["Retry-After"]) >= 1
    assert limited.json()["error"]["status"] == "RESOURCE_EXHAUSTED"
    message = limited.json()["error"]["message"]
    assert message.startswith("too many refused bearer tokens from 127.0.0.1: after 5 in a minute")
    assert "(gateway.auth_failures_per_minute)" in message
    assert "with a valid token (for a ServiceAccount: kubectl create token NAME)" in message


async def test_past_the_limit_a_participant_already_accepted_still_gets_in_and_no_one_new(
    replicas: Replicas, kubeconfig: Path, namespace: str
) -> None:
    """One client's bad tokens must not lock out the people who share its address (a NAT, the
    ingress): a token the gateway accepted before is still reviewed, past its verdict's 30 s."""
    replica = replicas(participant_identity="tokenreview", auth_failures_per_minute=1)
    alice = account_token(kubeconfig, namespace, "alice")
    bob = account_token(kubeconfig, namespace, "bob")

    async with httpx.AsyncClient(timeout=30) as http:
        first = await list_tasks(http, replica, alice)
        guessed = await list_tasks(http, replica, random_bearer())
        guessed_again = await list_tasks(http, replica, random_bearer())
        bob_new = await list_tasks(http, replica, bob)
        await asyncio.sleep(31)  # alice's verdict is no longer cached; one refill takes 60 s
        before = token_reviews(kubeconfig)
        alice_later = await list_tasks(http, replica, alice)
        reviewed = eventually(
            lambda: token_reviews(kubeconfig) == before + 1,
            within=20,
            what="alice's token reviewed again",
        )
        guessed_later = await list_tasks(http, replica, random_bearer())

    assert first.status_code == 200
    assert guessed.status_code == 401
    assert guessed_again.status_code == 429
    assert bob_new.status_code == 429  # valid, but new: not checked from this address yet
    assert alice_later.status_code == 200
    assert reviewed
    assert guessed_later.status_code == 429


async def test_with_token_audiences_only_a_token_made_for_the_gateway_is_accepted(
    replicas: Replicas, kubeconfig: Path, namespace: str, api: Any, tmp_path: Path
) -> None:
    replica = replicas(participant_identity="tokenreview", token_audiences=[GATEWAY_AUDIENCE])
    account = f"system:serviceaccount:{namespace}:carol"
    await HarnessTasks(api, namespace).create(
        "carols-task", {"goal": "Check.", "participants": [{"id": account, "role": "assignee"}]}
    )
    scoped = account_token(kubeconfig, namespace, "carol", GATEWAY_AUDIENCE)
    plain = account_token(kubeconfig, namespace, "carol")

    carol = await A2AUser.connect(replica.url, None, token=scoped)
    try:
        listed = await carol.list()
    finally:
        await carol.close()
    async with httpx.AsyncClient(timeout=30) as http:
        refused = await list_tasks(http, replica, plain)

    assert [t.id for t in listed.tasks] == ["carols-task"]
    assert refused.status_code == 401
    message = refused.json()["error"]["message"]
    assert message.startswith("the bearer token was refused by Kubernetes: ")
    assert message.endswith(
        "; this gateway takes only tokens made for it, with the audience tiny-harness-gateway "
        "(gateway.token_audiences); for a ServiceAccount: "
        "kubectl create token NAME --audience tiny-harness-gateway"
    )
    # Why it is worth it: the gateway's token is no good against the API server itself.
    assert not api_server_accepts(kubeconfig, scoped, tmp_path / "scoped.kubeconfig")
    assert api_server_accepts(kubeconfig, plain, tmp_path / "plain.kubeconfig")


def api_server_accepts(admin: Path, token: str, path: Path) -> bool:
    """Whether the API server itself authenticates ``token`` (a kubeconfig with it alone)."""
    config = yaml.safe_load(admin.read_text())
    config["users"] = [{"name": "bearer", "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = "bearer"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    proc = subprocess.run(
        ["kubectl", f"--kubeconfig={path}", "auth", "whoami"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if proc.returncode != 0:
        assert "Unauthorized" in proc.stderr, proc.stderr
    return proc.returncode == 0
