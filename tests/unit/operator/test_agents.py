"""The agent directory's pure parts and the remote exchange's rules, without a network: what
an agent's status says from its card, which interface is talked to, how a failed call is
classified, what the first message carries, and the agent model's validation."""

from __future__ import annotations

import httpx
import pytest
from a2a.client.errors import A2AClientError, A2AClientTimeoutError
from a2a.types import AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentSkill
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from pydantic import ValidationError

from tiny_harness.core.agent import AgentChoice, AgentSpec
from tiny_harness.core.agent import AgentSkill as Skill
from tiny_harness.core.destinations import DestinationSettings
from tiny_harness.core.task import TaskSpec, spec_from_envelope
from tiny_harness.core.turn import DrainEntry, InboundMessage
from tiny_harness.operator.agents import (
    ResolveError,
    checked_interface,
    chosen_interface,
    only_interface,
    status_of_card,
)
from tiny_harness.operator.remote_calls import classify
from tiny_harness.operator.remote_turn import AGENT_SELF, envelope, relayed
from tiny_harness.outbound.guard import DestinationRefusedError


def card(*interfaces: tuple[str, str, str], skills: tuple[str, ...] = ("echo",)) -> AgentCard:
    return AgentCard(
        name="echo",
        description="Repeats.",
        capabilities=AgentCapabilities(
            streaming=True, extensions=[AgentExtension(uri="https://example.test/ext")]
        ),
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=binding, protocol_version=version)
            for url, binding, version in interfaces
        ],
        skills=[AgentSkill(id=s, name=s.title(), description=f"does {s}") for s in skills],
    )


def test_the_interface_is_the_agents_first_choice_we_speak_at_1_0_when_it_has_it() -> None:
    offered = card(
        ("grpc://x", "GRPC", "1.0"),
        ("http://x/v03", "JSONRPC", "0.3"),
        ("http://x/", "JSONRPC", "1.0"),
        ("http://x/rest", "HTTP+JSON", "1.0"),
    )
    chosen = chosen_interface(offered)
    assert chosen is not None
    assert (chosen.url, chosen.protocol_version) == ("http://x/", "1.0")
    only_03 = chosen_interface(card(("http://x/v03", "JSONRPC", "0.3")))
    assert only_03 is not None
    assert only_03.protocol_version == "0.3"


def test_a_card_with_no_transport_we_speak_is_not_ready_and_says_what_it_offers() -> None:
    with pytest.raises(ResolveError) as caught:
        status_of_card(AgentSpec(card_url="http://x"), card(("grpc://x", "GRPC", "1.0")), 1)
    assert caught.value.reason == "NoTransport"
    assert "it offers: GRPC 1.0" in str(caught.value)
    assert caught.value.lasting


def test_the_status_says_what_the_card_says_and_keeps_the_allowed_skills_only() -> None:
    offered = card(("http://x/", "JSONRPC", "1.0"), skills=("echo", "shout"))
    status = status_of_card(AgentSpec(card_url="http://x", skills=("shout",)), offered, 3)
    assert (status.name, status.url, status.streaming, status.observed_generation) == (
        "echo",
        "http://x/",
        True,
        3,
    )
    assert [s.id for s in status.skills] == ["shout"]
    assert status.extensions == ("https://example.test/ext",)
    assert status.ready
    with pytest.raises(ResolveError, match=r"spec\.skills names skills the card does not have: x"):
        status_of_card(AgentSpec(card_url="http://x", skills=("x",)), offered, 3)


def test_the_card_url_is_split_as_the_resolver_takes_it() -> None:
    assert AgentSpec(card_url="http://a:1/.well-known/agent-card.json").well_known_url == (
        "http://a:1",
        "/.well-known/agent-card.json",
    )
    assert AgentSpec(card_url="https://a/base/").well_known_url == (
        "https://a/base",
        "/.well-known/agent-card.json",
    )


def test_an_agent_spec_is_refused_naming_what_to_fix() -> None:
    with pytest.raises(ValidationError, match="must be http:// or https://"):
        AgentSpec(card_url="file:///etc/passwd")
    with pytest.raises(ValidationError, match="needs exactly one of value or valueFrom"):
        AgentSpec.model_validate({"cardUrl": "http://x", "headers": [{"name": "A"}]})
    with pytest.raises(ValidationError, match="needs exactly one of value or valueFrom"):
        AgentSpec.model_validate(
            {
                "cardUrl": "http://x",
                "headers": [
                    {
                        "name": "A",
                        "value": "v",
                        "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}},
                    }
                ],
            }
        )


def _status_error(code: int) -> A2AClientError:
    request = httpx.Request("POST", "http://x/")
    response = httpx.Response(code, request=request)
    error = A2AClientError(f"HTTP Error {code}")
    error.__cause__ = httpx.HTTPStatusError("x", request=request, response=response)
    return error


@pytest.mark.parametrize(
    ("error", "reason", "transient"),
    [
        (_status_error(401), "RemoteUnauthorized", False),
        (_status_error(403), "RemoteUnauthorized", False),
        (_status_error(404), "RemoteAgentUnavailable", False),
        (_status_error(429), "RemoteUnavailable", True),
        (_status_error(503), "RemoteUnavailable", True),
        (_status_error(400), "RemoteRefused", False),
        (A2AClientTimeoutError("slow"), "RemoteUnavailable", True),
        (ConnectionRefusedError("refused"), "RemoteUnavailable", True),
        (TaskNotFoundError("gone"), "RemoteTaskGone", False),
        (InvalidParamsError("bad"), "RemoteRefused", False),
    ],
)
def test_a_failed_call_is_classified_for_what_the_sub_task_shows(
    error: BaseException, reason: str, transient: bool
) -> None:
    failure = classify("echo", error)
    assert (failure.reason, failure.transient) == (reason, transient)
    assert "echo" in str(failure)


def test_a_refused_destination_fails_the_sub_task_at_once_naming_it() -> None:
    refusal = DestinationSettings().refuse_address("169.254.169.254")
    assert refusal is not None
    wrapped = httpx.ConnectError(str(refusal.message))
    wrapped.__cause__ = DestinationRefusedError(refusal)
    sdk = A2AClientError("network")
    sdk.__cause__ = wrapped

    failure = classify("echo", sdk)

    assert (failure.reason, failure.transient) == ("RemoteDestinationRefused", False)
    assert "agent echo was not called: the operator refuses to connect to 169.254.169.254" in (
        str(failure)
    )


def test_a_card_may_put_its_endpoint_on_another_origin_only_when_the_spec_allows_it() -> None:
    elsewhere = card(("https://api.example.test:8443/a2a", "JSONRPC", "1.0"))
    plain = AgentSpec(card_url="https://agent.example.test/.well-known/agent-card.json")

    with pytest.raises(ResolveError) as refused:
        checked_interface(plain, elsewhere)

    assert refused.value.reason == "InterfaceOriginNotAllowed"
    assert refused.value.lasting
    assert (
        "names its endpoint https://api.example.test:8443/a2a, on "
        "https://api.example.test:8443, not on the card's origin https://agent.example.test"
    ) in str(refused.value)
    allowing = AgentSpec(
        card_url="https://agent.example.test/", allowed_origins=("https://API.example.test:8443/",)
    )
    assert allowing.allowed_origins == ("https://api.example.test:8443",)
    assert checked_interface(allowing, elsewhere).url == "https://api.example.test:8443/a2a"
    same = card(("https://agent.example.test:443/a2a", "JSONRPC", "1.0"))
    assert checked_interface(plain, same).url == "https://agent.example.test:443/a2a"


def test_the_client_is_made_from_the_checked_interface_alone() -> None:
    offered = card(("http://x/", "JSONRPC", "1.0"), ("http://elsewhere/rest", "HTTP+JSON", "1.0"))

    reduced = only_interface(offered, offered.supported_interfaces[0])

    assert [i.url for i in reduced.supported_interfaces] == ["http://x/"]
    assert len(offered.supported_interfaces) == 2  # the card read is left as it was
    assert reduced.name == offered.name


def test_allowed_origins_must_be_origins() -> None:
    with pytest.raises(ValidationError, match=r"allowed_origins"):
        AgentSpec(card_url="https://a.example/", allowed_origins=("https://b.example/path",))
    with pytest.raises(ValidationError, match=r"spec\.allowedOrigins: .*valid port"):
        AgentSpec(card_url="https://a.example/", allowed_origins=("https://b.example:99999",))


def test_a_bug_is_not_mistaken_for_the_agents_failure() -> None:
    with pytest.raises(KeyError):
        classify("echo", KeyError("ours"))


def test_the_first_message_names_this_task_as_its_parent_on_another_agent() -> None:
    task = TaskSpec(goal="Summarise", description="briefly", acceptance_criteria=("short",))
    sent = envelope("research-sub-1", task)
    parsed = spec_from_envelope(sent)  # as the remote gateway reads it
    assert parsed.parent is not None
    assert (parsed.parent.task_id, parsed.parent.agent) == ("research-sub-1", AGENT_SELF)
    assert (parsed.goal, parsed.description, parsed.acceptance_criteria) == (
        "Summarise",
        "briefly",
        ("short",),
    )
    assert parsed.local_parent is None  # nothing there looks the parent up


def test_what_a_turn_took_is_one_message_naming_who_said_what_when_several() -> None:
    one = DrainEntry(id="d", messages=(InboundMessage(id="a", content="Go.", sender="alice"),))
    assert [p.text for p in relayed(one)] == ["Go."]
    two = DrainEntry(
        id="d",
        messages=(
            InboundMessage(id="a", content="Go.", sender="alice"),
            InboundMessage(id="b", content="Quickly.", sender="bob"),
        ),
    )
    assert [p.text for p in relayed(two)] == ["alice: Go.", "bob: Quickly."]


def test_the_model_is_told_each_agent_by_name_card_and_skills() -> None:
    choice = AgentChoice(
        name="market",
        title="tiny-harness",
        about="Knows markets.",
        skills=(Skill(id="research", name="Research", description="digs"),),
    )
    assert choice.line() == "- market (tiny-harness): Knows markets. Skills: Research: digs."
