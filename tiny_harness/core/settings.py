"""Settings: one typed object, read once at start-up from a TOML file and the environment.

Every error names the key to fix (``gateway.max_request_bytes: ...``). Secrets never live
here: model API keys come from the environment (in a cluster, from a Secret), and a file that
tries to carry one is refused.

The file (``--config``, or ``$TINY_HARNESS_CONFIG``, or the CLI's configuration home:
``tiny_harness/cli/home.py``)::

    provider = "openai"            # or "anthropic"

    [openai]                       # see tiny_harness.models.config for every key
    model = "gpt-5-mini"
    models = ["gpt-5-mini", "gpt-5"]
    base_url = "http://127.0.0.1:8000/v1"   # any OpenAI-compatible server

    [gateway]
    bind = "127.0.0.1:8080"
    base_url = "http://127.0.0.1:8080"
    namespace = "default"
    participant_identity = "header"   # or "tokenreview"
    token_audiences = ["tiny-harness"]   # token review: only tokens made for the gateway
    auth_failures_per_minute = 20  # token review: refused tokens per client address
    max_request_bytes = 1048576
    rate_limit_per_minute = 120
    max_messages_per_participant = 10000       # quotas: what one participant keeps stored
    max_message_bytes_per_participant = 33554432
    max_live_tasks_per_participant = 100
    max_messages_per_namespace = 100000        # ... and the whole namespace
    max_message_bytes_per_namespace = 134217728
    max_live_tasks_per_namespace = 1000
    send_take_seconds = 60         # a send not taken by a turn this long ends with a note
    send_idle_seconds = 900        # a send with nothing visible changing this long ends too

    [operator]
    namespaces = []                # empty: the whole cluster
    lease_seconds = 15
    shards = 16                    # split tasks between replicas (0: one replica does all)
    ttl_seconds_after_finished = 604800   # delete finished tasks a week after they end
    reach = ["oncall"]             # anyone's model may also put a question to these people
    max_sub_task_depth = 8         # sub-tasks go at most this many levels below their root
    metrics_bind = "127.0.0.1:9090"

    [operator.destinations]        # what tool servers, agents and cards may be reached at
    allowed_cidrs = []             # lift the refusal of loopback / link-local / metadata ranges
    allowed_hosts = []             # names trusted with whatever they resolve to

    [operator.budget]              # a task whose spec sets no budget gets this one
    max_tokens = 2000000
    max_model_calls = 200
    on_exceeded = "park"           # or "fail"

    [client]                       # where the TUI connects (defaults: the local gateway, you)
    gateway_url = "http://127.0.0.1:8080"
    participant = "alice"          # header mode
    token_file = "/home/alice/.kube/harness-token"   # token-review mode

    [tracing]                      # off unless an endpoint is set (here or OTEL_EXPORTER_OTLP_*)
    otlp_endpoint = "http://otel-collector:4318"
    sample_ratio = 1.0
"""

from __future__ import annotations

import getpass
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tiny_harness.core.approval import ApprovalDefaults
from tiny_harness.core.destinations import DestinationSettings
from tiny_harness.core.errors import ConfigError
from tiny_harness.core.reach import DEFAULT_MAX_SUB_TASK_DEPTH
from tiny_harness.core.sizes import MAX_TREE_DEPTH
from tiny_harness.core.task import NAME_MAX, Budget

CONFIG_ENV: Final = "TINY_HARNESS_CONFIG"
_SECRET_KEYS: Final = frozenset({"api_key", "apikey", "token", "password", "secret"})


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _hostport(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


class GatewaySettings(_Section):
    bind: str = "127.0.0.1:8080"
    base_url: str | None = Field(
        default=None, description="The URL clients reach the gateway at; default from bind."
    )
    namespace: str = "default"
    participant_identity: Literal["header", "tokenreview"] = "header"
    token_audiences: tuple[Annotated[str, Field(min_length=1)], ...] = Field(
        default=(),
        description="Token review: ask for these audiences, so only a token made for the "
        "gateway (kubectl create token NAME --audience AUD) is accepted; empty: tokens for "
        "the API server itself.",
    )
    auth_failures_per_minute: int = Field(
        default=20,
        ge=1,
        description="Token review: refused tokens per minute per client address before the "
        "gateway answers 429 to any new token from it, without asking the API server.",
    )
    max_request_bytes: int = Field(default=1024 * 1024, ge=1024)
    rate_limit_per_minute: int = Field(default=120, ge=1)
    # The quotas (a2a_gateway/quotas.py). The namespace's keep what one gateway lets into etcd
    # to a fraction of etcd's default 2 GiB, with room above the load retention.md measures
    # (a team's 70,000 turns kept a week); a participant's are a tenth of them (a quarter for
    # bytes, which few participants send much of), so no one takes the namespace's room alone.
    max_messages_per_participant: int = Field(
        default=10_000,
        ge=1,
        description="Messages a participant may keep stored (sent and not yet deleted with "
        "their task); past it a send is refused (429) until some are deleted.",
    )
    max_message_bytes_per_participant: int = Field(
        default=32 * 1024 * 1024,
        ge=1,
        description="Bytes the messages a participant keeps stored may carry (core.sizes."
        "message_bytes); past it a send is refused (429; 413 for one message larger than this).",
    )
    max_live_tasks_per_participant: int = Field(
        default=100,
        ge=1,
        description="Tasks not yet ended that a participant's first messages created; past it "
        "a first message is refused (429) until one ends.",
    )
    max_messages_per_namespace: int = Field(
        default=100_000,
        ge=1,
        description="Messages the gateway's namespace may keep stored, whoever sent them; past "
        "it every participant's send is refused (429).",
    )
    max_message_bytes_per_namespace: int = Field(
        default=128 * 1024 * 1024,
        ge=1,
        description="Bytes the messages stored in the namespace may carry; past it every "
        "participant's send is refused (429).",
    )
    max_live_tasks_per_namespace: int = Field(
        default=1_000,
        ge=1,
        description="Tasks not yet ended in the namespace (sub-tasks included); past it every "
        "first message is refused (429).",
    )
    send_take_seconds: float = Field(
        default=60.0,
        gt=0,
        description="How long a send waits for a turn to take its message before it ends "
        "with a note that no operator has taken it (the message stays queued).",
    )
    send_idle_seconds: float = Field(
        default=900.0,
        gt=0,
        description="How long a send waits with nothing visible changing before it ends "
        "with a note that the task is still at work.",
    )
    max_streams_per_participant: int = Field(
        default=100,
        ge=1,
        description="Open streams (SubscribeToTask, SendStreamingMessage) one participant may "
        "hold on one gateway replica; past it a new stream is refused (429).",
    )
    stream_lifetime_seconds: float = Field(
        default=3600.0,
        gt=0,
        description="How long a stream stays open; then it ends cleanly and the client "
        "subscribes again with the last event id it read (Last-Event-ID) to go on.",
    )
    stream_queue_events: int = Field(
        default=256,
        ge=1,
        description="Changes a stream may leave unread; past it that stream alone is ended, "
        "saying so, and its client resumes from the last event id it read.",
    )

    @property
    def bind_address(self) -> tuple[str, int]:
        return _hostport(self.bind)

    @property
    def url(self) -> str:
        if self.base_url:
            return self.base_url.rstrip("/")
        host, port = self.bind_address
        return f"http://{host}:{port}"


class OperatorSettings(_Section):
    namespaces: tuple[str, ...] = ()
    identity: str | None = Field(
        default=None, description="This replica's name for the runner lease; default hostname."
    )
    lease_seconds: float = Field(default=15.0, gt=0)
    shards: int = Field(
        default=0,
        ge=0,
        le=1024,
        description="Split the tasks between replicas over this many shards, each held by a "
        "Lease (every replica must say the same); 0: this replica works every task.",
    )
    shard_set: str = Field(
        default="tiny-harness",
        pattern=r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$",
        description="The name of the replicas' shard Leases (one set per installation).",
    )
    lease_namespace: str | None = Field(
        default=None,
        description="Where the shard Leases live; default $POD_NAMESPACE, else 'default'.",
    )
    max_model_calls: int = Field(default=24, ge=1)
    budget: Budget | None = Field(
        default=None,
        description="The budget of a task whose spec sets none ([operator.budget]: max_tokens, "
        "max_model_calls, on_exceeded); empty: no limit.",
    )
    ttl_seconds_after_finished: int | None = Field(
        default=None,
        ge=0,
        description="Delete a finished task this many seconds after it ended, unless its "
        "spec.ttlSecondsAfterFinished says otherwise; empty: keep finished tasks.",
    )
    idle_timeout_seconds: int | None = Field(
        default=None,
        ge=1,
        description="End a conversation that has waited this long for its next message "
        "(onIdle), unless its spec.idleTimeoutSeconds says otherwise; with "
        "ttl_seconds_after_finished it keeps etcd bounded. Empty: conversations never idle out.",
    )
    on_idle: Literal["complete", "cancel"] = Field(
        default="complete",
        description="How an idle conversation ends when its spec does not say.",
    )
    first_message_seconds: float = Field(
        default=30.0,
        gt=0,
        description="How long a conversation created by its first message (a task annotated "
        "with the message's id, as the gateway creates one) stays SUBMITTED waiting for that "
        "message before it parks as awaiting its next message, saying the message never came.",
    )
    cache_bytes: int = Field(
        default=128 * 1024 * 1024,
        ge=1024 * 1024,
        description="Bytes of object text the operator keeps in memory whole (the tasks at "
        "work first); every other object is kept in summary and read back by name when it "
        "is worked. About a quarter of the memory the operator is given.",
    )
    metrics_bind: str | None = None
    tools: tuple[str, ...] = Field(
        default=(),
        description="Import paths (module:attribute) of tool lists to offer the model.",
    )
    plugin_dirs: tuple[str, ...] = Field(
        default=(), description="Plugin folders (hooks.json, commands.json) to load at start."
    )
    approvals: ApprovalDefaults = Field(
        default=ApprovalDefaults(),
        description="What an approval policy leaves out ([operator.approvals]: roles, "
        "timeout_seconds, on_timeout): who decides, how long a call waits, what its timeout does.",
    )
    reach: tuple[Annotated[str, Field(min_length=1, max_length=NAME_MAX)], ...] = Field(
        default=(),
        max_length=256,
        description="People any task's model in the operator's namespaces may create a task "
        "for (create_task_for_participant), besides the task's participants and its "
        "spec.reach: the namespace's list, written by whoever installs the harness for it.",
    )
    max_sub_task_depth: int = Field(
        default=DEFAULT_MAX_SUB_TASK_DEPTH,
        ge=1,
        le=MAX_TREE_DEPTH,
        description="How many levels below its root task a sub-task may be (a root's sub-task "
        "is at 1); a spawn, a /sub-task or a gateway child past it is refused. At most "
        f"{MAX_TREE_DEPTH}, the depth to which each ancestor's budget is held.",
    )
    destinations: DestinationSettings = Field(
        default=DestinationSettings(),
        description="Where tool servers, remote agents and cards may be reached "
        "([operator.destinations]: allowed_cidrs, allowed_hosts): loopback, link-local and "
        "cloud metadata addresses are refused unless listed (core/destinations.py).",
    )

    @property
    def replica_identity(self) -> str:
        return self.identity or os.environ.get("POD_NAME") or os.uname().nodename

    @property
    def shard_namespace(self) -> str:
        return self.lease_namespace or os.environ.get("POD_NAMESPACE") or "default"


class TracingSettings(_Section):
    """Where spans go. Off unless an endpoint is set here or in the standard
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` variables (whose
    ``OTEL_EXPORTER_OTLP_HEADERS`` carry any credentials: they never belong in this file)."""

    otlp_endpoint: str | None = Field(
        default=None,
        pattern=r"^https?://[^\s]+$",
        description="The OTLP/HTTP collector, such as http://otel-collector:4318 (the "
        "/v1/traces path is added); empty: the OTEL_EXPORTER_OTLP_* variables, or no tracing.",
    )
    sample_ratio: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description="The share of new traces to record; a request that arrives with a "
        "sampled trace context is always recorded.",
    )


class ClientSettings(_Section):
    """Where the CLI's clients (the TUI) connect, and who they are there. Defaults: the local
    cluster's gateway (``[gateway] base_url``) and the login name, in header mode."""

    gateway_url: str | None = Field(
        default=None,
        pattern=r"^https?://[^\s]+$",
        description="The A2A gateway to attach to (a cluster's, through port-forward or "
        "ingress); empty: the local one, [gateway] base_url.",
    )
    participant: str | None = Field(
        default=None,
        min_length=1,
        description="Who you are to a gateway in header mode; empty: your login name.",
    )
    token_file: str | None = Field(
        default=None,
        min_length=1,
        description="A file holding the bearer token a gateway in token-review mode checks "
        "(the token itself never goes in this file).",
    )

    def url(self, gateway: GatewaySettings) -> str:
        return self.gateway_url or gateway.url

    def identity(self) -> str:
        return self.participant or getpass.getuser()


class Settings(_Section):
    provider: Literal["openai", "anthropic"] = "openai"
    openai: Mapping[str, Any] | None = None
    anthropic: Mapping[str, Any] | None = None
    gateway: GatewaySettings = GatewaySettings()
    operator: OperatorSettings = OperatorSettings()
    tracing: TracingSettings = TracingSettings()
    client: ClientSettings = ClientSettings()

    @property
    def provider_section(self) -> Mapping[str, Any]:
        section = self.openai if self.provider == "openai" else self.anthropic
        if section is None:
            raise ConfigError(
                self.provider, f"provider is {self.provider!r} but [{self.provider}] is missing"
            )
        return section

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> Settings:
        _refuse_secrets(data, "")
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            first = exc.errors()[0]
            key = ".".join(str(p) for p in first["loc"]) or "settings"
            raise ConfigError(key, str(first["msg"])) from None

    @classmethod
    def load(cls, path: Path | None = None) -> Settings:
        """Read the file at ``path`` (or ``$TINY_HARNESS_CONFIG``); no file means defaults."""
        if path is None and os.environ.get(CONFIG_ENV):
            path = Path(os.environ[CONFIG_ENV])
        if path is None:
            return cls()
        try:
            data = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError(str(path), "configuration file not found") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(str(path), f"not valid TOML: {exc}") from None
        return cls.parse(data)


def _refuse_secrets(data: Mapping[str, Any], prefix: str) -> None:
    for key, value in data.items():
        name = f"{prefix}{key}"
        if key.lower() in _SECRET_KEYS:
            raise ConfigError(
                name,
                "secrets do not belong in the settings file; use the environment "
                "(OPENAI_API_KEY, ANTHROPIC_API_KEY) or a Kubernetes Secret",
            )
        if isinstance(value, Mapping):
            _refuse_secrets(value, f"{name}.")
