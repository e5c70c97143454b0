"""The tool server model: the one definition of a ``HarnessToolServer``.

A tool server is an MCP server (streamable HTTP) whose tools the operator offers to the model.
It is a Kubernetes object of its own, not a field of a task, so that the people allowed to
create one (RBAC on ``harnesstoolservers``, a namespace admin's decision) are the only ones who
choose a URL: a task only names servers (``spec.toolServers``), and a participant who writes a
task cannot name an address. Headers come from a Secret (``secretKeyRef``), never inline, so
the object can be read, listed and kept in Git without carrying a credential.

:class:`ToolServerSpec` is the object's ``.spec`` and :class:`ToolServerStatus` its
``.status`` (written only by the operator: what it discovered, and a ``Ready`` condition).
The CRD is generated from these classes (:mod:`tiny_harness.kube.crd`).
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import ConfigDict, Field

from tiny_harness.core.approval import ToolServerApproval
from tiny_harness.core.conditions import Condition, Conditions
from tiny_harness.core.sizes import ENTRY_TEXT_BYTES
from tiny_harness.core.task import NAME_MAX, Model, ShortText

#: Defaults and bounds of a call's time and its result's size.
DEFAULT_TIMEOUT_SECONDS: Final = 30
MAX_TIMEOUT_SECONDS: Final = 600
DEFAULT_MAX_RESULT_BYTES: Final = 64 * 1024
#: The most a tool server may be allowed to return: what one journal entry may hold.
MAX_RESULT_BYTES: Final = ENTRY_TEXT_BYTES
#: The most tools one server may offer the model (more is refused as not ready).
MAX_TOOLS: Final = 128

#: Headers the MCP transport sets itself; a Secret may not replace them.
RESERVED_HEADERS: Final = frozenset(
    {
        "accept",
        "content-length",
        "content-type",
        "host",
        "mcp-protocol-version",
        "mcp-session-id",
        "transfer-encoding",
    }
)

#: The annotation a Secret carries to say which tool servers may send its values, and where: a
#: comma-separated list of ``<HarnessToolServer name>@<origin>`` entries, such as
#: ``search@https://search.example.com`` (core/secret_destinations.py). Without an entry for
#: the server and the origin of its spec.url the operator refuses to use the Secret, so
#: whoever may create a tool server, or re-aim one, cannot send any Secret they can name to a
#: URL of their choosing.
SECRET_ANNOTATION: Final = "tiny-harness.madarauchiha-314.github.io/tool-servers"


def _reserved_header_rule() -> dict[str, Any]:
    listed = ", ".join(f"'{h}'" for h in sorted(RESERVED_HEADERS))
    return {
        "x-kubernetes-validations": [
            {
                "rule": f"!(self.name.lowerAscii() in [{listed}])",
                "message": "the MCP transport sets this header itself; use another name",
            }
        ]
    }


class SecretKeyRef(Model):
    """A key of a Secret in the tool server's own namespace."""

    name: ShortText = Field(description="The Secret's name (in the tool server's namespace).")
    key: str = Field(
        min_length=1,
        max_length=NAME_MAX,
        pattern=r"^[-._a-zA-Z0-9]+$",
        description="The key whose value is the header's value.",
    )


class HeaderSource(Model):
    """Where a header's value comes from: only a Secret, never the object itself."""

    secret_key_ref: SecretKeyRef = Field(description="The Secret key holding the value.")


class HeaderFromSecret(Model):
    """One HTTP header sent with every request to the server, its value read from a Secret."""

    model_config = ConfigDict(json_schema_extra=_reserved_header_rule())

    name: str = Field(
        min_length=1,
        max_length=256,
        pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$",
        description="The header's name, such as Authorization.",
    )
    value_from: HeaderSource = Field(description="The Secret key that holds the value.")


class ToolServerSpec(Model):
    """What a namespace admin declares: where the MCP server is and how far to trust it."""

    url: str = Field(
        max_length=2048,
        pattern=r"^https?://[^\s]+$",
        description="The server's streamable-HTTP endpoint, such as http://search:8000/mcp.",
    )
    headers: tuple[HeaderFromSecret, ...] = Field(
        default=(),
        max_length=32,
        description="Headers sent with every request, each value from a Secret key. The Secret "
        f"must carry the annotation {SECRET_ANNOTATION} with an entry <server name>@<origin of "
        "spec.url>, such as search@https://search.example.com.",
    )
    tools: tuple[ShortText, ...] | None = Field(
        default=None,
        max_length=MAX_TOOLS,
        description="The server's tools the model may call, by their MCP names; empty: all.",
    )
    default: bool = Field(
        default=False,
        description="Offer this server's tools to every task in the namespace, whether or not "
        "its spec.toolServers names it.",
    )
    timeout_seconds: int = Field(
        default=DEFAULT_TIMEOUT_SECONDS,
        ge=1,
        le=MAX_TIMEOUT_SECONDS,
        description="The longest one call (or a discovery) may take; past it the model is told "
        "the call timed out.",
    )
    max_result_bytes: int = Field(
        default=DEFAULT_MAX_RESULT_BYTES,
        ge=256,
        le=MAX_RESULT_BYTES,
        description="The most of a result's text (UTF-8 bytes) the model is given; the rest is "
        "cut, and the model is told so.",
    )
    approval: ToolServerApproval | None = Field(
        default=None,
        description="Calls of this server's tools (all, or those listed) wait for a "
        "participant's approval before they run; who may decide, for how long.",
    )


class DiscoveredTool(Model):
    """One tool the operator found on the server and offers to the model."""

    name: ShortText = Field(description="The tool's name on the MCP server.")
    exposed_as: ShortText = Field(description="The name the model calls it by.")
    description: str = Field(default="", max_length=8192, description="What the server says.")
    input_schema: dict[str, Any] = Field(
        default_factory=dict, description="The JSON Schema of its arguments, as the server gave it."
    )


class ToolServerStatus(Model):
    """What the operator found: the tools, and whether the server is ready to be called."""

    tools: tuple[DiscoveredTool, ...] = Field(
        default=(), description="The tools offered to the model (after the allow-list)."
    )
    tool_count: int = Field(default=0, ge=0, description="How many tools are offered.")
    conditions: Conditions = Field(
        default=(), description="Ready: True once discovery succeeded for this generation."
    )
    observed_generation: int | None = Field(
        default=None, description="The spec generation the tools and conditions describe."
    )
    server: str | None = Field(
        default=None, max_length=512, description="The name and version the server gave."
    )
    discovery_time: str | None = Field(
        default=None, description="When the tools were last listed (RFC 3339)."
    )

    def ready(self) -> Condition | None:
        return next((c for c in self.conditions if c.type == "Ready"), None)
