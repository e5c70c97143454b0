"""The remote agents a namespace declares (``HarnessAgent``), their cards read and kept ready.

Every replica keeps the agents of the namespaces it watches in memory: it watches the
HarnessAgent objects, and for each new spec (a new ``generation``) or a change of the
:data:`~tiny_harness.kube.names.RESOLVE_ANNOTATION` it reads the Secrets its headers name and
then the agent's card, and records in the agent's status what it found, with a ``Ready``
condition saying why not when it is not. The model is offered only ready agents
(:meth:`AgentDirectory.offered`), and a sub-task on one talks to it with the client built here
(:meth:`AgentDirectory.ready`).

The rules (following, attempts and the status write are those of every declared endpoint,
operator/endpoints.py; what is here is what resolving an agent means):

- **Bounded.** A card that cannot be read is tried again after 1, 2, 4 ... seconds, at most
  :data:`RESOLVE_ATTEMPTS` times; one refused for a reason that trying again will not mend (a
  Secret that does not allow it, a card with no transport the harness speaks) is not tried
  again. Then the agent stays not ready, saying so and how to try again (edit it, or change
  the resolve annotation). Each attempt says in the status which one it was.
- **Replicas agree without talking.** Each replica reads the card itself (it needs the card and
  the header values in its own memory anyway) and writes the status only when what it found
  differs from what the status says, on the version it read: a second replica that found the
  same writes nothing.
- **Races.** An event for an agent while its card is being read cancels that read and starts
  another for the newest object (last writer wins, and the newest spec is what is read); all of
  it runs on the event loop's one thread. A sub-task that asks for an agent while its card is
  being read for a new spec sees it as not ready yet (reason ``Resolving``).
- **Secrets** are read with the operator's identity, held in memory only, never logged and
  never written to a status or an event. A Secret is used only when its annotation lets this
  agent send to the card's origin (``<name>@<origin>``, kube/secrets.py), and its header is
  attached only to requests for an origin the Secret names (tiny_harness.outbound).
- **Where the harness talks.** The card names the agent's endpoint; one on another origin than
  the card's is refused (``InterfaceOriginNotAllowed``) unless ``spec.allowedOrigins`` lists
  it, and then a Secret header goes there only if its Secret names that origin too
  (``SecretDestinationNotAllowed`` otherwise). The A2A client is made from the card reduced
  to the interface that was checked, so it cannot pick another. Every connection goes
  through the destination policy (``DestinationRefused``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Final

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.errors import AgentCardResolutionError
from a2a.types import AgentCard, AgentInterface
from a2a.utils.constants import PROTOCOL_VERSION_1_0, TransportProtocol
from kubernetes_asyncio import client
from pydantic import ValidationError

from tiny_harness.core.agent import (
    SECRET_ANNOTATION,
    AgentChoice,
    AgentSkill,
    AgentSpec,
    AgentStatus,
)
from tiny_harness.core.approval import ApprovalPolicy
from tiny_harness.core.clock import rfc3339
from tiny_harness.core.destinations import DestinationSettings
from tiny_harness.core.errors import HarnessError
from tiny_harness.core.extensions import KAGENT_HITL_EXT_URI
from tiny_harness.core.secret_destinations import (
    BoundHeader,
    OriginError,
    not_granted,
    origin_of,
)
from tiny_harness.core.task import invalid_task_error
from tiny_harness.kube.client import Obj
from tiny_harness.kube.names import AGENT_PLURAL, RESOLVE_ANNOTATION
from tiny_harness.operator.endpoints import (
    Declared,
    Endpoints,
    Key,
    NotReadyError,
    ready_condition,
    secret_headers,
)
from tiny_harness.outbound.clients import agent_client
from tiny_harness.outbound.guard import refusal_in

log = logging.getLogger(__name__)

#: How many times a card that cannot be read is tried before the agent is left not ready.
RESOLVE_ATTEMPTS: Final = 6
#: Back-off between attempts to (re)start the watch of HarnessAgents.
WATCH_RETRY_SECONDS: Final = (0.5, 1.0, 2.0, 5.0, 10.0)
#: How long one request to an agent may take to connect, and to send or read (a stream's
#: read is bounded by the agent's answer timeout instead, see operator/remote.py).
CONNECT_SECONDS: Final = 10.0
REQUEST_SECONDS: Final = 60.0
#: The transports the harness speaks to an agent, in the order it prefers them.
BINDINGS: Final = (TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON)


class AgentNotReadyError(HarnessError):
    """The sub-task's agent does not exist here, or its card could not be read."""

    def __init__(self, namespace: str, name: str, why: str) -> None:
        super().__init__(
            f"harnessagent {name!r} in namespace {namespace!r} is not ready: {why} "
            f"(kubectl get harnessagent {name} -n {namespace} -o yaml shows its conditions)"
        )
        self.name = name


class ResolveError(NotReadyError):
    """Why an agent's card could not be read: a reason (the condition's) and a message;
    ``lasting`` when trying again will not help until the spec or a Secret changes."""


@dataclass(eq=False)
class Agent(Declared):
    """One HarnessAgent as this replica knows it: its spec, what its status says (as far as
    this replica knows: ``Resolving`` while its card is read), and, once ready, its card and
    the HTTP client that talks to it."""

    spec: AgentSpec | None = None
    #: Why the spec is not valid, when it is not.
    problem: str = ""
    status: AgentStatus = field(default_factory=AgentStatus)
    card: AgentCard | None = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    #: The headers from Secrets, each with the origins its Secret lets it go to.
    bound: tuple[BoundHeader, ...] = field(default=(), repr=False)
    http: httpx.AsyncClient | None = field(default=None, repr=False)

    @property
    def ready(self) -> bool:
        return self.card is not None and self.http is not None and self.status.ready

    def choice(self) -> AgentChoice:
        about = " ".join(p for p in (self.status.description or "", self.spec_description) if p)
        return AgentChoice(
            name=self.name, title=self.status.name or "", about=about, skills=self.status.skills
        )

    @property
    def spec_description(self) -> str:
        return self.spec.description if self.spec is not None else ""

    def client(self) -> Client:
        """An A2A client of the agent (cheap: it shares the agent's HTTP connections)."""
        assert self.card is not None
        assert self.http is not None
        streaming = bool(self.status.streaming)
        config = ClientConfig(
            streaming=streaming,
            # An agent that does not stream answers a send at once, and is polled.
            polling=not streaming,
            httpx_client=self.http,
            supported_protocol_bindings=list(BINDINGS),
        )
        return ClientFactory(config).create(self.card)

    @property
    def speaks_harness(self) -> bool:
        """Whether the agent is a tiny-harness (its card declares our task extension), so
        it takes a completion as the control envelope."""
        from tiny_harness.core.extensions import TASK_EXT_URI

        return TASK_EXT_URI in self.status.extensions


def chosen_interface(card: AgentCard) -> AgentInterface | None:
    """The interface the harness talks to: the first of the card's (the agent's preference)
    whose binding it speaks, at protocol 1.0 when that binding offers it."""
    for interface in card.supported_interfaces:
        if interface.protocol_binding not in BINDINGS:
            continue
        same = [
            i for i in card.supported_interfaces if i.protocol_binding == interface.protocol_binding
        ]
        preferred: AgentInterface = next(
            (i for i in same if i.protocol_version.startswith(PROTOCOL_VERSION_1_0)), interface
        )
        return preferred
    return None


def only_interface(card: AgentCard, interface: AgentInterface) -> AgentCard:
    """The card with ``interface`` as its only one: what the A2A client is made from, so it
    talks to the interface that was checked and no other."""
    reduced = AgentCard()
    reduced.CopyFrom(card)
    del reduced.supported_interfaces[:]
    reduced.supported_interfaces.append(interface)
    return reduced


def checked_interface(spec: AgentSpec, card: AgentCard) -> AgentInterface:
    """The interface the harness will talk to (:func:`chosen_interface`), refused when the
    card offers none it speaks, or puts it on another origin than the card's that
    ``spec.allowedOrigins`` does not list."""
    interface = chosen_interface(card)
    if interface is None:
        offered = ", ".join(
            f"{i.protocol_binding} {i.protocol_version}" for i in card.supported_interfaces
        )
        raise ResolveError(
            "NoTransport",
            f"the card offers no transport the harness speaks (JSONRPC or HTTP+JSON); it "
            f"offers: {offered or 'none'}",
            lasting=True,
        )
    home = origin_of(spec.card_url)
    try:
        there = origin_of(interface.url)
    except OriginError as exc:
        raise ResolveError(
            "InterfaceOriginNotAllowed", f"the card's interface is not usable: {exc}", lasting=True
        ) from None
    if there != home and there not in spec.allowed_origins:
        raise ResolveError(
            "InterfaceOriginNotAllowed",
            f"the card at {spec.card_url} names its endpoint {interface.url}, on {there}, not "
            f"on the card's origin {home}: the harness talks to another origin only when "
            f"spec.allowedOrigins lists it (add {there} there if the agent is really served "
            "from it)",
            lasting=True,
        )
    return interface


def status_of_card(spec: AgentSpec, card: AgentCard, generation: int) -> AgentStatus:
    """What the status says of an agent whose card was read: its name, description, endpoint
    and skills (those of the allow-list, when there is one), Ready."""
    interface = checked_interface(spec, card)
    skills = tuple(
        AgentSkill(id=s.id, name=s.name, description=s.description[:4096])
        for s in card.skills
        if not spec.skills or s.id in spec.skills
    )
    missing = sorted(set(spec.skills) - {s.id for s in card.skills})
    if missing:
        raise ResolveError(
            "UnknownSkill",
            f"spec.skills names skills the card does not have: {', '.join(missing)}; the card "
            f"has: {', '.join(s.id for s in card.skills) or 'none'}",
            lasting=True,
        )
    return AgentStatus(
        name=card.name[:253] or None,
        description=card.description or None,
        url=interface.url,
        protocol_binding=interface.protocol_binding,
        protocol_version=interface.protocol_version or None,
        streaming=bool(card.capabilities.streaming),
        skills=skills,
        extensions=tuple(e.uri for e in card.capabilities.extensions),
        conditions=(
            ready_condition(
                "True", "CardRead", f"the card of {card.name or 'the agent'} was read", generation
            ),
        ),
        observed_generation=generation,
        resolved_time=rfc3339(),
    )


class AgentDirectory(Endpoints[Agent, AgentStatus]):
    """The HarnessAgents of the watched namespaces (None: the whole cluster)."""

    plural = AGENT_PLURAL
    max_attempts = RESOLVE_ATTEMPTS
    gave_up = f"not tried again until spec or annotation {RESOLVE_ANNOTATION} changes"
    times = frozenset({"resolved_time"})

    def __init__(
        self,
        api: client.ApiClient,
        namespaces: Collection[str],
        *,
        destinations: DestinationSettings | None = None,
    ) -> None:
        super().__init__(api, namespaces)
        #: What every connection to an agent or its card is checked against.
        self.destinations = destinations or DestinationSettings()

    @property
    def agents(self) -> dict[Key, Agent]:
        return self.entries

    # -- what the workers ask ----------------------------------------------------------------

    def offered(self, namespace: str) -> tuple[AgentChoice, ...]:
        """The ready agents of ``namespace``, by name, as spawn_subtask offers them."""
        return tuple(
            agent.choice()
            for (ns, _), agent in sorted(self.agents.items())
            if ns == namespace and agent.ready
        )

    def approvals(self, namespace: str) -> tuple[tuple[str, ApprovalPolicy | None], ...]:
        """Every declared agent of ``namespace`` with its approval policy (for the gates of a
        turn: ready or not, a spawn that names it is gated as its spec says)."""
        return tuple(
            (name, agent.spec.approval if agent.spec is not None else None)
            for (ns, name), agent in sorted(self.agents.items())
            if ns == namespace
        )

    async def settled(self, namespace: str, name: str) -> Agent:
        """:meth:`ready`, once a read of the agent's card in flight has ended (bounded by one
        read's time): an operator just started has the agent's status from its object but
        not yet its card, and a turn resumed in that moment must not fail its sub-task for
        a read that is about to land."""
        agent = self.agents.get((namespace, name))
        if agent is not None and not agent.ready and agent.resolving and agent.running:
            with contextlib.suppress(Exception):  # a failed read: ready() says why
                async with asyncio.timeout(REQUEST_SECONDS + CONNECT_SECONDS):
                    await asyncio.shield(agent.running)
        return self.ready(namespace, name)

    def ready(self, namespace: str, name: str) -> Agent:
        """The agent, ready to be talked to; :class:`AgentNotReadyError` saying why not."""
        agent = self.agents.get((namespace, name))
        if agent is None:
            raise AgentNotReadyError(namespace, name, "there is no such HarnessAgent")
        if not agent.ready:
            raise AgentNotReadyError(namespace, name, agent.status.ready_message())
        return agent

    # -- the kind (operator/endpoints.py) ----------------------------------------------------

    def declared(self, namespace: str, name: str, obj: Obj) -> Agent:
        return Agent(namespace, name, obj)

    def parse_status(self, obj: Obj) -> AgentStatus:
        return _read_status(obj.get("status"))

    def mark(self, entry: Agent) -> object:
        annotations = entry.obj["metadata"].get("annotations") or {}
        return entry.generation, str(annotations.get(RESOLVE_ANNOTATION) or "")

    async def respecified(self, entry: Agent) -> None:
        """A new spec (or a new resolve annotation): its card is read afresh, and until then
        the agent is not ready (``Resolving``)."""
        await self.dropped(entry)
        try:
            entry.spec, entry.problem = AgentSpec.model_validate(entry.obj.get("spec") or {}), ""
        except ValidationError as exc:
            entry.spec, entry.problem = None, str(invalid_task_error(exc))
        entry.status = self.parse_status(entry.obj)
        if not entry.status.conditions or entry.status.observed_generation != entry.generation:
            entry.status = self._failed(entry, "Resolving", "reading the agent's card")

    async def dropped(self, entry: Agent) -> None:
        http, entry.http, entry.card = entry.http, None, None
        entry.headers, entry.bound = {}, ()
        if http is not None:
            await http.aclose()

    async def resolve(self, entry: Agent) -> None:
        if entry.spec is None:
            raise ResolveError("InvalidSpec", entry.problem, lasting=True)
        status = await self._read_card(entry, entry.spec)
        log.info("agents: %s/%s ready: %s at %s", *entry.key, status.name, status.url)
        await self._write(entry, status)

    async def not_ready(self, entry: Agent, error: NotReadyError, message: str) -> None:
        log.warning("agents: %s/%s: %s", *entry.key, message)
        await self._write(entry, self._failed(entry, error.reason, message))

    # -- reading a card ----------------------------------------------------------------------

    def _failed(self, agent: Agent, reason: str, message: str) -> AgentStatus:
        return AgentStatus(
            conditions=(ready_condition("False", reason, message, agent.generation),),
            observed_generation=agent.generation,
            resolved_time=rfc3339(),
        )

    async def _read_card(self, agent: Agent, spec: AgentSpec) -> AgentStatus:
        headers, bound = await self._headers(agent, spec)
        http = agent_client(
            self.destinations,
            headers=headers,
            bound=bound,
            timeout=httpx.Timeout(REQUEST_SECONDS, connect=CONNECT_SECONDS),
        )
        base, path = spec.well_known_url
        try:
            card = await A2ACardResolver(http, base).get_agent_card(relative_card_path=path)
            interface = checked_interface(spec, card)
            self._check_bound(agent, bound, interface.url)
            status = status_of_card(spec, card, agent.generation)
        except AgentCardResolutionError as exc:
            await http.aclose()
            refused = refusal_in(exc)
            if refused is not None:
                raise ResolveError(
                    "DestinationRefused",
                    f"the card at {spec.card_url} was not read: {refused}",
                    lasting=True,
                ) from None
            code = exc.status_code
            if code in (401, 403):
                raise ResolveError(
                    "CardUnauthorized",
                    f"the agent refused the harness's credentials (HTTP {code}) for its card at "
                    f"{spec.card_url}: check the Secret its spec.headers name",
                    lasting=True,
                ) from None
            raise ResolveError("CardUnreachable", f"the card could not be read: {exc}") from None
        except BaseException:
            await http.aclose()
            raise
        agent.card = only_interface(card, interface)
        if KAGENT_HITL_EXT_URI in status.extensions:
            # Activated on every call (A2A-Extensions), so the agent says which calls wait
            # for approval in a shape the relay reads (operator/relay.py).
            http.headers["A2A-Extensions"] = KAGENT_HITL_EXT_URI
        agent.headers, agent.bound, agent.http = headers, bound, http
        return status

    def _check_bound(self, agent: Agent, bound: tuple[BoundHeader, ...], url: str) -> None:
        """Refuse an endpoint that a Secret header may not go to (one on another origin that
        spec.allowedOrigins lists, but the Secret does not)."""
        for header in bound:
            if not header.may_go_to(url):
                raise ResolveError(
                    "SecretDestinationNotAllowed",
                    not_granted(
                        secret=header.secret,
                        annotation=SECRET_ANNOTATION,
                        user="agent",
                        name=agent.name,
                        origin=origin_of(url),
                        where="the origin of the endpoint its card names",
                        granted=header.origins,
                    ),
                    lasting=True,
                )

    async def _headers(
        self, agent: Agent, spec: AgentSpec
    ) -> tuple[dict[str, str], tuple[BoundHeader, ...]]:
        """The headers' values: plain ones as they are, the others from their Secrets (used
        only when the Secret's annotation lets this agent send to the card's origin,
        kube/secrets.py), bound to the origins their Secrets name."""
        plain = {h.name: h.value for h in spec.headers if h.value is not None}
        bound = await secret_headers(
            self.api,
            agent.namespace,
            (
                (h.name, h.value_from.secret_key_ref)
                for h in spec.headers
                if h.value_from is not None
            ),
            user="agent",
            name=agent.name,
            annotation=SECRET_ANNOTATION,
            destination=origin_of(spec.card_url),
            where="the origin of spec.cardUrl",
            refusals_last=True,
        )
        return plain, bound

    async def _write(self, agent: Agent, status: AgentStatus) -> None:
        """What this replica knows of the agent is ``status``; record it (unless the object
        says the same already, operator/endpoints.py)."""
        agent.status = status
        await self.write_status(agent, status)


def _read_status(raw: object) -> AgentStatus:
    try:
        return AgentStatus.model_validate(raw or {})
    except ValidationError:
        return AgentStatus()
