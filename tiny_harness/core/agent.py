"""The agent model: a remote A2A agent this harness may delegate sub-tasks to.

An agent is declared as a ``HarnessAgent`` custom resource so that who may point the harness at
an agent is an RBAC decision (whoever may create HarnessAgents in a namespace, normally its
admin), and so ``kubectl get``, GitOps and the chart work on agents as on anything else.
:class:`AgentSpec` is its ``.spec`` and :class:`AgentStatus` its ``.status``; the CRD is
generated from them (``kube/crd.py``), as the task's is.

A spec names where the agent's card is and how to reach the agent (headers, their values from
Secrets, and the origins besides the card's where the card may put the agent's endpoint); the
operator reads the card and records in the status what the model is told about
the agent (its name, description and skills) and what the harness needs to talk to it (its
endpoint, protocol, whether it streams, the extensions it supports), with a ``Ready``
condition. Only a ready agent is offered to the model.
"""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import ConfigDict, Field, field_validator, model_validator

from tiny_harness.core.approval import ApprovalPolicy
from tiny_harness.core.conditions import Conditions
from tiny_harness.core.secret_destinations import OriginError, origin_of, parse_origin
from tiny_harness.core.task import NAME_MAX, TEXT_MAX, TTL_MAX, Model, ShortText
from tiny_harness.core.tool_server import HeaderSource

#: How long a remote task may go without a visible change before its sub-task fails.
ANSWER_TIMEOUT_DEFAULT: Final = 600
#: Attempts at a remote call that fails for a reason that may pass (unreachable, 5xx, 429).
MAX_RETRIES_DEFAULT: Final = 4

_HEADER_NAME = r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$"

#: The annotation a Secret carries to say which agents may send its values, and where: a
#: comma-separated list of ``<HarnessAgent name>@<origin>`` entries (the card's origin, and any
#: other origin the agent's endpoint is on), as tool servers have theirs
#: (core/secret_destinations.py).
SECRET_ANNOTATION: Final = "tiny-harness.madarauchiha-314.github.io/agents"


class AgentHeader(Model):
    """A header sent with every request to the agent: a plain value, or one from a Secret (a
    bearer token, an API key), which is read when the agent is resolved and never logged or
    written anywhere."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.value) != has(self.valueFrom)",
                    "message": "a header needs exactly one of value or valueFrom",
                }
            ]
        }
    )

    name: Annotated[str, Field(min_length=1, max_length=256, pattern=_HEADER_NAME)] = Field(
        description="The header's name, e.g. Authorization or X-Participant-Id."
    )
    value: str | None = Field(
        default=None, max_length=4096, description="The value, when it is not a secret."
    )
    value_from: HeaderSource | None = Field(
        default=None,
        description="The value from a Secret key (for credentials); the Secret must carry the "
        f"annotation {SECRET_ANNOTATION} with an entry <agent name>@<origin> for the card's "
        "origin (and for the endpoint's, when that is another).",
    )

    @model_validator(mode="after")
    def _one_value(self) -> AgentHeader:
        if (self.value is None) == (self.value_from is None):
            raise ValueError(
                f"spec.headers: header {self.name!r} needs exactly one of value or valueFrom"
            )
        return self


class AgentSpec(Model):
    """What a namespace admin declares: where the agent is, and how to reach it."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "self.cardUrl.startsWith('http://') || "
                    "self.cardUrl.startsWith('https://')",
                    "message": "spec.cardUrl: the agent card's URL must be http:// or https://",
                },
            ]
        }
    )

    card_url: Annotated[str, Field(min_length=8, max_length=2048)] = Field(
        description="The agent card's URL (https://host/.well-known/agent-card.json), or the "
        "agent's base URL, to which the well-known path is added."
    )
    headers: tuple[AgentHeader, ...] = Field(
        default=(),
        max_length=16,
        description="Headers sent with every request to the agent, the card's included.",
    )
    allowed_origins: tuple[
        Annotated[str, Field(max_length=2048, pattern=r"^https?://[^/\s?#@]+/?$")], ...
    ] = Field(
        default=(),
        max_length=16,
        description="Origins (scheme://host[:port]) besides the card's own where the card may "
        "put the agent's endpoint; a card whose endpoint is on any other origin is refused. A "
        "header from a Secret goes there only if the Secret names that origin as well.",
    )
    skills: tuple[ShortText, ...] = Field(
        default=(),
        max_length=64,
        description="The ids of the card's skills the harness may delegate to; empty: all.",
    )
    description: str = Field(
        default="",
        max_length=TEXT_MAX,
        description="What to tell the model about this agent, beside its card's description.",
    )
    answer_timeout_seconds: int = Field(
        default=ANSWER_TIMEOUT_DEFAULT,
        ge=1,
        le=TTL_MAX,
        description="How long a remote task may go without a visible change (a new state or "
        "message) before its sub-task fails with reason RemoteNoAnswer.",
    )
    max_retries: int = Field(
        default=MAX_RETRIES_DEFAULT,
        ge=0,
        le=32,
        description="Attempts at a call that failed for a reason that may pass (unreachable, "
        "HTTP 429 or 5xx) before the sub-task fails with reason RemoteUnavailable.",
    )
    approval: ApprovalPolicy | None = Field(
        default=None,
        description="Every sub-task the model sends to this agent waits for a participant's "
        "approval first; who may decide, for how long.",
    )

    @model_validator(mode="after")
    def _http_url(self) -> AgentSpec:
        if not self.card_url.startswith(("http://", "https://")):
            raise ValueError("spec.cardUrl: the agent card's URL must be http:// or https://")
        try:
            origin_of(self.card_url)
        except OriginError as exc:
            raise ValueError(f"spec.cardUrl: {exc}") from None
        return self

    @field_validator("allowed_origins")
    @classmethod
    def _origins(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # Normalised once, so a check compares like with like (HTTPS://A:443 is https://a).
        try:
            return tuple(parse_origin(o) for o in value)
        except OriginError as exc:
            raise ValueError(f"spec.allowedOrigins: {exc}") from None

    @property
    def well_known_url(self) -> tuple[str, str]:
        """The base URL and the card's path, as the A2A card resolver takes them."""
        url = self.card_url
        marker = "/.well-known/"
        if marker in url:
            base, _, rest = url.partition(marker)
            return base, marker + rest
        return url.rstrip("/"), "/.well-known/agent-card.json"


class AgentSkill(Model):
    """A skill from the agent's card, as the model is told it."""

    id: Annotated[str, Field(max_length=NAME_MAX)] = Field(description="The skill's id.")
    name: str = Field(default="", max_length=NAME_MAX, description="Its name.")
    description: str = Field(default="", max_length=TEXT_MAX, description="What it does.")


class AgentStatus(Model):
    """What the operator read from the agent's card; written only by the operator."""

    name: str | None = Field(default=None, max_length=NAME_MAX, description="The card's name.")
    description: str | None = Field(
        default=None, max_length=TEXT_MAX, description="The card's description."
    )
    url: str | None = Field(
        default=None, max_length=2048, description="The endpoint the harness talks to."
    )
    protocol_binding: str | None = Field(
        default=None, max_length=64, description="JSONRPC or HTTP+JSON."
    )
    protocol_version: str | None = Field(
        default=None, max_length=32, description="The A2A protocol version it speaks there."
    )
    streaming: bool | None = Field(default=None, description="Whether the agent streams.")
    skills: tuple[AgentSkill, ...] = Field(
        default=(), description="The skills the harness may delegate to (the allow-list's)."
    )
    extensions: tuple[Annotated[str, Field(max_length=2048)], ...] = Field(
        default=(), description="The URIs of the A2A extensions its card declares."
    )
    conditions: Conditions = Field(default=(), description="Ready, with its reason.")
    observed_generation: int | None = Field(
        default=None, description="The spec generation this status reflects."
    )
    resolved_time: str | None = Field(
        default=None, description="When the card was last read (RFC 3339)."
    )

    @property
    def ready(self) -> bool:
        return any(c.type == "Ready" and c.status == "True" for c in self.conditions)

    def ready_message(self) -> str:
        found = next((c for c in self.conditions if c.type == "Ready"), None)
        if found is None:
            return "its card has not been read yet"
        return found.message or found.reason


class AgentChoice(Model):
    """A ready agent as the model is offered it in ``spawn_subtask``."""

    name: ShortText = Field(description="The HarnessAgent's name: what spawn_subtask takes.")
    title: str = Field(default="", description="The name its card gives it.")
    about: str = Field(default="", description="What the agent is for, from its card and spec.")
    skills: tuple[AgentSkill, ...] = ()

    def line(self) -> str:
        """One line of the tool's description."""
        skills = "; ".join(
            f"{s.name or s.id}: {s.description}" if s.description else (s.name or s.id)
            for s in self.skills
        )
        title = f" ({self.title})" if self.title and self.title != self.name else ""
        about = f" {self.about}" if self.about else ""
        return f"- {self.name}{title}:{about}" + (f" Skills: {skills}." if skills else "")
