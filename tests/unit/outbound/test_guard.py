"""The guard and the clients over it, against real servers on loopback: a refused destination
never gets a connection, a name is checked by what it resolves to, and a Secret header goes
only to the origins its Secret names (each redirect's included), on both HTTP stacks."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import httpx2
import pytest

from tiny_harness.core.destinations import LOCAL_DEVELOPMENT, DestinationSettings
from tiny_harness.core.secret_destinations import BoundHeader
from tiny_harness.outbound.clients import agent_client, tool_server_client
from tiny_harness.outbound.guard import DestinationRefusedError, Guard, refusal_in
from tiny_harness.testing.listener import Listener

TIMEOUT = httpx.Timeout(5.0)


@pytest.fixture
def here() -> Iterator[Listener]:
    with Listener({"/card": {"ok": True}}) as listener:
        yield listener


@pytest.fixture
def elsewhere() -> Iterator[Listener]:
    with Listener({"/card": {"ok": True}}) as listener:
        yield listener


def bound_to(listener: Listener) -> BoundHeader:
    return BoundHeader("Authorization", "Bearer t-secret", frozenset({listener.origin}), "creds")


async def test_a_name_that_resolves_to_a_refused_address_is_refused_before_connecting() -> None:
    opened: list[str] = []

    async def swapped(host: str, port: int) -> list[str]:
        return ["203.0.113.7", "169.254.169.254"]  # the second answer is the metadata service

    async def open_(address: str) -> str:
        opened.append(address)
        return address

    guard = Guard(DestinationSettings(), resolver=swapped)
    with pytest.raises(DestinationRefusedError) as refused:
        await guard.connect("innocent.example.com", 80, 5.0, open_)

    assert refused.value.refusal.rule == "metadata"
    assert "169.254.169.254 (innocent.example.com)" in str(refused.value)
    assert opened == []


async def test_a_listed_name_is_trusted_and_a_metadata_name_is_never_looked_up() -> None:
    looked_up: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        looked_up.append(host)
        return ["10.0.0.1"]

    trusted = Guard(DestinationSettings(allowed_hosts=("db.internal",)), resolver=resolver)
    assert await trusted.addresses("db.internal", 443) == ["db.internal"]
    with pytest.raises(DestinationRefusedError):
        await trusted.addresses("metadata.google.internal", 80)
    assert await trusted.addresses("search.example.com", 443) == ["10.0.0.1"]
    assert looked_up == ["search.example.com"]


async def test_loopback_gets_no_connection_unless_listed(here: Listener) -> None:
    for url in (f"{here.url}/card", f"http://localhost:{here.port}/card"):
        async with agent_client(
            DestinationSettings(), headers={}, bound=[], timeout=TIMEOUT
        ) as client:
            with pytest.raises(httpx.ConnectError) as failed:
                await client.get(url)
        refused = refusal_in(failed.value)
        assert refused is not None
        assert refused.refusal.rule == "loopback"
    async with tool_server_client(DestinationSettings(), bound=[], timeout=5) as mcp_client:
        with pytest.raises(httpx2.ConnectError) as failed2:
            await mcp_client.get(f"{here.url}/card")
    assert refusal_in(failed2.value) is not None
    assert here.connections == 0

    async with agent_client(LOCAL_DEVELOPMENT, headers={}, bound=[], timeout=TIMEOUT) as client:
        assert (await client.get(f"{here.url}/card")).json() == {"ok": True}
    assert here.connections == 1


async def test_a_secret_header_goes_only_to_the_origin_its_secret_names(
    here: Listener, elsewhere: Listener
) -> None:
    caller = {"X-Caller": "harness-a"}
    async with agent_client(
        LOCAL_DEVELOPMENT, headers=caller, bound=[bound_to(here)], timeout=TIMEOUT
    ) as client:
        await client.get(f"{here.url}/card")
        await client.get(f"{elsewhere.url}/card")
    async with tool_server_client(LOCAL_DEVELOPMENT, bound=[bound_to(here)], timeout=5) as mcp:
        await mcp.post(f"{here.url}/card", json={})
        await mcp.post(f"{elsewhere.url}/card", json={})

    assert [r.headers.get("Authorization") for r in here.requests] == ["Bearer t-secret"] * 2
    assert here.requests[0].headers["X-Caller"] == "harness-a"
    assert len(elsewhere.requests) == 2
    assert not elsewhere.received("t-secret")
    assert elsewhere.requests[0].headers["X-Caller"] == "harness-a"


async def test_a_redirect_elsewhere_does_not_carry_the_secret(
    here: Listener, elsewhere: Listener
) -> None:
    async with agent_client(
        LOCAL_DEVELOPMENT, headers={}, bound=[bound_to(here)], timeout=TIMEOUT
    ) as client:
        first = client.build_request("GET", f"{here.url}/card")
        await client.send(first)
        # A redirect copies the previous request's headers (httpx strips only Authorization,
        # and not on an upgrade to https): the hook removes a bound header the new origin
        # is not granted, whatever its name.
        moved = client.build_request("GET", f"{elsewhere.url}/card", headers=first.headers)
        await client.send(moved)

    assert here.received("t-secret")
    assert not elsewhere.received("t-secret")
