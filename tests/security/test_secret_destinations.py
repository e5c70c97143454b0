"""A Secret goes only where it is bound to go, and the operator connects only where the
destination policy lets it.

Real control plane, real operator, and servers on 127.0.0.1: a *listener* that records every
connection and every request's headers stands where an attacker would want the operator to
call. Each re-aiming (a patch of ``spec.url``, a tool server deleted and created again under its
name, a card whose endpoint is elsewhere) is refused with the object's Ready condition saying
why and what to write, and the listener never sees the Secret's value. The destination policy
refuses metadata and link-local addresses before any connection is made, and loopback unless
the settings list it.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable, Iterator
from typing import Any, Final

import pytest
from a2a.types import AgentCapabilities, AgentCard, AgentInterface
from a2a.utils.constants import TransportProtocol
from google.protobuf.json_format import MessageToDict

from tests.conftest import Kubectl, OperatorProcess
from tests.eventually import NotYet, eventually, eventually_async
from tests.integration.lifecycle_support import Tasks
from tests.integration.remote_support import ForeignAgent, agent_manifest
from tests.integration.remote_support import ready_condition as agent_condition
from tests.integration.toolserver_support import declare, ready_condition, wait_ready
from tiny_harness.core.agent import SECRET_ANNOTATION as AGENTS_ANNOTATION
from tiny_harness.core.secret_destinations import origin_of
from tiny_harness.core.tool_server import SECRET_ANNOTATION as TOOLS_ANNOTATION
from tiny_harness.testing.listener import Listener
from tiny_harness.testing.mcp_server import McpServerThread

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]

#: The Secret's value: it must never reach the listener.
TOKEN: Final = "Bearer s3cret-0123456789"
FROM_SECRET: Final = [
    {"name": "Authorization", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}}
]


@pytest.fixture
def listener() -> Iterator[Listener]:
    with Listener() as running:
        yield running


def card_of(endpoint: str) -> dict[str, Any]:
    """An agent card (as the a2a SDK writes one) whose JSON-RPC endpoint is ``endpoint``."""
    card = AgentCard(
        name="echo",
        description="Repeats what it is told.",
        version="1.0",
        capabilities=AgentCapabilities(streaming=False),
        supported_interfaces=[
            AgentInterface(
                url=endpoint, protocol_binding=TransportProtocol.JSONRPC, protocol_version="1.0"
            )
        ],
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )
    return MessageToDict(card)


def give_secret(kubectl: Kubectl, annotation: str, entries: str, value: str = TOKEN) -> None:
    """Secret ``creds`` holding ``value``, its ``annotation`` set to ``entries``."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "annotations": {annotation: entries}},
        "data": {"token": base64.b64encode(value.encode()).decode()},
    }
    applied = kubectl.apply(json.dumps(secret))
    assert applied.returncode == 0, applied.stderr


def tool_server_refused(kubectl: Kubectl, name: str, reason: str) -> dict[str, Any]:
    """The tool server's Ready condition, once it is False with ``reason``."""

    def probe() -> dict[str, Any] | None:
        condition = ready_condition(kubectl, name)
        if condition and condition["status"] == "False" and condition["reason"] == reason:
            return condition
        return None

    return eventually(probe, within=30, what=f"tool server {name} Ready=False {reason}")


async def agent_refused(kubectl: Kubectl, name: str, reason: str) -> dict[str, Any]:
    """The agent's Ready condition, once it is False with ``reason``."""

    async def refused() -> dict[str, Any] | NotYet:
        agent = await asyncio.to_thread(kubectl.get_json, "harnessagent", name)
        condition = agent_condition(agent)
        wanted = condition.get("status") == "False" and condition.get("reason") == reason
        return condition if wanted else NotYet(condition)

    return await eventually_async(
        refused, within=60, what=f"agent {name} to be Ready=False {reason}", interval=0.1
    )


def apply_agent(kubectl: Kubectl, name: str, card_url: str, **spec: Any) -> None:
    applied = kubectl.apply(agent_manifest(name, card_url, headers=FROM_SECRET, **spec))
    assert applied.returncode == 0, applied.stderr


# -- a Secret is bound to where it may go --------------------------------------------------------


def test_a_patch_that_re_aims_a_tool_server_does_not_take_its_secret_along(
    operator: Operator, kubectl: Kubectl, mcp: McpServerThread, listener: Listener
) -> None:
    operator()
    # The old entry ("weather") is still there beside the bound one: it grants nothing.
    give_secret(kubectl, TOOLS_ANNOTATION, f"weather, weather@{origin_of(mcp.url)}")
    declare(kubectl, "weather", mcp.url, headers=FROM_SECRET)
    wait_ready(kubectl, "weather")

    patch = json.dumps({"spec": {"url": f"{listener.url}/mcp"}})
    kubectl.run("patch", "htool", "weather", "--type=merge", "-p", patch)

    condition = tool_server_refused(kubectl, "weather", "SecretDestinationNotAllowed")
    assert f"not to {listener.origin} (the origin of spec.url)" in condition["message"]
    assert (
        f"add weather@{listener.origin} to the Secret's annotation {TOOLS_ANNOTATION}"
        in condition["message"]
    )
    assert not listener.received("s3cret")
    assert listener.requests == []


def test_a_tool_server_deleted_and_created_again_elsewhere_gets_no_secret(
    operator: Operator, kubectl: Kubectl, mcp: McpServerThread, listener: Listener
) -> None:
    operator()
    give_secret(kubectl, TOOLS_ANNOTATION, f"weather, weather@{origin_of(mcp.url)}")
    declare(kubectl, "weather", mcp.url, headers=FROM_SECRET)
    wait_ready(kubectl, "weather")

    kubectl.run("delete", "htool", "weather", "--wait=true")
    declare(kubectl, "weather", f"{listener.url}/mcp", headers=FROM_SECRET)

    condition = tool_server_refused(kubectl, "weather", "SecretDestinationNotAllowed")
    assert f"only to {origin_of(mcp.url)}, not to {listener.origin}" in condition["message"]
    assert not listener.received("s3cret")
    assert listener.requests == []


def test_an_entry_naming_only_the_tool_server_is_refused_saying_what_to_write(
    operator: Operator, kubectl: Kubectl, listener: Listener
) -> None:
    operator()
    give_secret(kubectl, TOOLS_ANNOTATION, "weather")
    declare(kubectl, "weather", f"{listener.url}/mcp", headers=FROM_SECRET)

    condition = tool_server_refused(kubectl, "weather", "SecretNotBound")

    assert (
        f"write weather@{listener.origin} in place of weather ({listener.origin} is the origin "
        "of spec.url)" in condition["message"]
    )
    assert listener.requests == []


async def test_a_card_whose_endpoint_is_elsewhere_is_refused_and_the_secret_never_goes_there(
    operator: Operator, kubectl: Kubectl, tasks: Tasks, listener: Listener
) -> None:
    with Listener({"/.well-known/agent-card.json": card_of(f"{listener.url}/")}) as cards:
        give_secret(kubectl, AGENTS_ANNOTATION, f"echo, echo@{cards.origin}")
        operator()
        apply_agent(kubectl, "echo", cards.url, maxRetries=0)

        condition = await agent_refused(kubectl, "echo", "InterfaceOriginNotAllowed")
        # A task that names the agent all the same is not sent there either.
        await tasks.create("parent")
        await tasks.create_child("parent", "parent-far", "Say hello.", agent="echo")
        failed = await tasks.wait("parent-far", "TASK_STATE_FAILED", within=30)

    assert (
        f"names its endpoint {listener.url}/, on {listener.origin}, not on the card's origin "
        f"{cards.origin}" in condition["message"]
    )
    assert "spec.allowedOrigins" in condition["message"]
    [error] = [c for c in failed["conditions"] if c["type"] == "Error"]
    assert error["reason"] == "RemoteAgentNotReady"
    assert cards.received("s3cret")  # the card's own origin is the one the Secret names
    assert not listener.received("s3cret")
    assert listener.requests == []


async def test_an_allowed_origin_the_secret_does_not_name_gets_no_secret(
    operator: Operator, kubectl: Kubectl, listener: Listener
) -> None:
    with Listener({"/.well-known/agent-card.json": card_of(f"{listener.url}/")}) as cards:
        give_secret(kubectl, AGENTS_ANNOTATION, f"echo@{cards.origin}")
        operator()
        apply_agent(kubectl, "echo", cards.url, allowedOrigins=[listener.origin])

        condition = await agent_refused(kubectl, "echo", "SecretDestinationNotAllowed")

    assert (
        f"not to {listener.origin} (the origin of the endpoint its card names)"
        in (condition["message"])
    )
    assert f"add echo@{listener.origin} to the Secret's annotation" in condition["message"]
    assert listener.requests == []


async def test_an_endpoint_on_another_origin_works_when_the_spec_and_the_secret_both_name_it(
    operator: Operator, kubectl: Kubectl, tasks: Tasks
) -> None:
    async with ForeignAgent(token="s3cret-0123456789").running() as agent:
        card = MessageToDict(agent.card)
        with Listener({"/.well-known/agent-card.json": card}) as cards:
            there = origin_of(agent.url)
            give_secret(kubectl, AGENTS_ANNOTATION, f"echo@{cards.origin}, echo@{there}")
            operator()
            apply_agent(kubectl, "echo", cards.url, allowedOrigins=[there])
            await agent_ready(kubectl, "echo")
            await tasks.create("parent")
            await tasks.create_child("parent", "parent-far", "Say hello.", agent="echo")
            done = await tasks.wait("parent-far", "TASK_STATE_COMPLETED", within=30)

    assert agent.executor.received == ["Say hello."]  # the brief, past its bearer check
    assert "s3cret" not in json.dumps(done)


async def agent_ready(kubectl: Kubectl, name: str) -> None:
    """Wait for the agent's Ready=True (failing with its condition if it turns False)."""

    async def ready() -> bool:
        condition = agent_condition(await asyncio.to_thread(kubectl.get_json, "harnessagent", name))
        assert condition.get("status") != "False", condition
        return condition.get("status") == "True"

    await eventually_async(ready, within=60, what=f"agent {name} to be Ready", interval=0.1)


# -- the destination policy ----------------------------------------------------------------------


async def test_metadata_and_link_local_addresses_are_refused_before_any_connection(
    operator: Operator, kubectl: Kubectl
) -> None:
    operator()  # loopback allowed, as every test's operator: nothing else is
    declare(kubectl, "imds", "http://169.254.169.254/latest/mcp")
    declare(kubectl, "imds-v6", "http://[fd00:ec2::254]/mcp")
    declare(kubectl, "node", "http://[fe80::1]:8080/mcp")
    applied = kubectl.apply(agent_manifest("gce", "http://metadata.google.internal/"))
    assert applied.returncode == 0, applied.stderr

    imds = tool_server_refused(kubectl, "imds", "DestinationRefused")
    imds_v6 = tool_server_refused(kubectl, "imds-v6", "DestinationRefused")
    node = tool_server_refused(kubectl, "node", "DestinationRefused")
    gce = await agent_refused(kubectl, "gce", "DestinationRefused")

    assert (
        "the operator refuses to connect to 169.254.169.254: it is a cloud metadata address "
        '(destination rule "metadata"); nothing was sent. If the operator should reach it, add '
        "169.254.169.254/32 to [operator.destinations] allowed_cidrs (the chart's "
        "operator.destinations.allowedCidrs)"
    ) in imds["message"]
    assert (
        'fd00:ec2::254: it is a cloud metadata address (destination rule "metadata")'
        in (imds_v6["message"])
    )
    assert "fe80::1: it is a link-local address" in node["message"]
    assert '(destination rule "link-local")' in node["message"]
    assert "add fe80::1/128 to [operator.destinations] allowed_cidrs" in node["message"]
    assert (
        "refuses to connect to metadata.google.internal: it is the name of a cloud metadata service"
    ) in gce["message"]
    assert (
        "add metadata.google.internal to [operator.destinations] allowed_hosts" in (gce["message"])
    )


async def test_loopback_is_refused_unless_the_settings_list_it(
    operator: Operator, kubectl: Kubectl, listener: Listener
) -> None:
    operator(destinations={})  # the defaults, as the chart installs them
    declare(kubectl, "local", f"{listener.url}/mcp")
    applied = kubectl.apply(agent_manifest("near", f"http://localhost:{listener.port}/"))
    assert applied.returncode == 0, applied.stderr

    local = tool_server_refused(kubectl, "local", "DestinationRefused")
    near = await agent_refused(kubectl, "near", "DestinationRefused")

    assert (
        "refuses to connect to 127.0.0.1: it is a loopback address, the operator's own machine "
        '(destination rule "loopback")'
    ) in local["message"]
    assert "add 127.0.0.1/32 to [operator.destinations] allowed_cidrs" in local["message"]
    assert "(localhost): it is a loopback address" in near["message"]
    assert listener.connections == 0
