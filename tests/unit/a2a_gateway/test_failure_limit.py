"""Token review's rationing, without a cluster: the per-address table of refused tokens (one
token bucket per address, bounded in memory), how an address is keyed, and the gateway over an
API server nobody answers, where every review fails: public paths never get that far, and past
the limit nothing is even tried (429)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from kubernetes_asyncio import client

from tiny_harness.a2a_gateway.app import build_app
from tiny_harness.a2a_gateway.limits import TokenBuckets, address_key
from tiny_harness.core.settings import GatewaySettings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_address_has_its_limit_at_once_then_waits_for_the_refill() -> None:
    clock = Clock()
    failures = TokenBuckets(3, clock=clock)

    taken = [failures.take("10.0.0.7") for _ in range(3)]
    refused = failures.take("10.0.0.7")
    clock.now += 20.0
    refilled = failures.take("10.0.0.7")

    assert taken == [0.0, 0.0, 0.0]
    assert refused == pytest.approx(20.0)  # one of three a minute comes back every 20 s
    assert refilled == 0.0
    assert failures.take("10.0.0.7") == pytest.approx(20.0)


def test_addresses_are_counted_apart_and_waiting_takes_nothing() -> None:
    failures = TokenBuckets(1, clock=Clock())

    failures.take("10.0.0.7")

    assert failures.wait("10.0.0.7") == pytest.approx(60.0)
    assert failures.wait("10.0.0.8") == 0.0
    assert failures.wait("10.0.0.8") == 0.0
    assert failures.take("10.0.0.8") == 0.0


def test_a_take_given_back_is_there_again() -> None:
    failures = TokenBuckets(1, clock=Clock())

    failures.take("10.0.0.7")
    failures.give_back("10.0.0.7")

    assert failures.take("10.0.0.7") == 0.0
    assert failures.take("10.0.0.7") > 0


def test_the_table_holds_at_most_max_keys_forgetting_the_least_recently_taken() -> None:
    failures = TokenBuckets(1, clock=Clock(), max_keys=100)

    for n in range(10_000):
        failures.take(f"10.0.{n // 256}.{n % 256}")

    assert len(failures) == 100
    assert failures.wait("10.0.39.15") > 0  # the last address: still counted
    assert failures.wait("10.0.0.0") == 0.0  # the first: forgotten, so full again


@pytest.mark.parametrize(
    ("host", "key"),
    [
        ("192.0.2.10", "192.0.2.10"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
        ("::ffff:192.0.2.10", "192.0.2.10"),
        (None, "unknown"),
        ("", "unknown"),
    ],
)
def test_an_ipv6_client_is_counted_by_its_64_since_it_holds_all_of_them(
    host: str | None, key: str
) -> None:
    assert address_key(host) == key


@pytest.fixture
async def gateway() -> AsyncIterator[httpx.AsyncClient]:
    """The gateway in token-review mode over an API server nobody answers at: every review
    that is tried fails, so each one tried shows as a 401 that says so."""
    api = client.ApiClient(configuration=client.Configuration(host="http://127.0.0.1:9"))
    settings = GatewaySettings(participant_identity="tokenreview", auth_failures_per_minute=2)
    app = build_app(settings, api)
    try:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app, client=("192.0.2.10", 40000)),
                base_url="http://gateway",
            ) as http,
        ):
            yield http
    finally:
        await api.close()


LIST = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}


async def test_public_paths_never_read_credentials_whatever_they_carry(
    gateway: httpx.AsyncClient,
) -> None:
    paths = ["/healthz", "/.well-known/agent-card.json", "/ui/config.json", "/a2a/ext/task.json"]
    headers = [{"Authorization": "Bearer not-a-token"}, {"Authorization": "Basic YWxpY2U6eA=="}]

    answers = [
        (await gateway.get(path, headers=h)).status_code for path in paths for h in headers * 5
    ]
    first_call = await gateway.post("/", json=LIST, headers={"Authorization": "Bearer x"})

    assert set(answers) == {200}
    # Forty public requests with bad credentials spent none of the two failures allowed.
    assert first_call.status_code == 401
    assert "could not be verified" in first_call.json()["error"]["message"]


async def test_past_the_failure_limit_a_new_token_is_refused_429_without_a_review(
    gateway: httpx.AsyncClient,
) -> None:
    tried = [
        await gateway.post("/", json=LIST, headers={"Authorization": f"Bearer guess-{n}"})
        for n in range(2)
    ]
    refused = await gateway.post("/", json=LIST, headers={"Authorization": "Bearer guess-2"})
    whoami = await gateway.get("/ui/whoami", headers={"Authorization": "Bearer guess-3"})
    health = await gateway.get("/healthz", headers={"Authorization": "Bearer guess-4"})

    assert [r.status_code for r in tried] == [401, 401]
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "30"
    error = refused.json()["error"]
    assert error["status"] == "RESOURCE_EXHAUSTED"
    assert error["message"] == (
        "too many refused bearer tokens from 192.0.2.10: after 2 in a minute "
        "(gateway.auth_failures_per_minute) this gateway checks no new token from there; "
        "retry in 30s with a valid token (for a ServiceAccount: kubectl create token NAME)"
    )
    assert whoami.status_code == 429  # the UI's sign-in check is held to the same limit
    assert health.status_code == 200
