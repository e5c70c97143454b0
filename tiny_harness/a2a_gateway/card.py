"""The agent card: what an A2A client learns about this harness before its first call.

It names the two transports (JSON-RPC and HTTP+JSON, A2A 1.0), says the gateway streams, and
lists our three extensions, none required: the task extension (the task envelope and the task
as ``Task.metadata`` carries it), the status extension (the sub-state), and the commands
extension, whose params are every registered command a participant may type. Each extension's
description links its JSON Schema, which the gateway serves under :data:`SCHEMA_PATH`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from a2a.types import AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentSkill
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0, TransportProtocol

from tiny_harness import __version__
from tiny_harness.core.attachments import OPAQUE_TYPE, READ_TYPES
from tiny_harness.core.catalog import ModelCatalog
from tiny_harness.core.command_spec import CommandSpec, commands_params
from tiny_harness.core.commands.setup import build_command_registry
from tiny_harness.core.extensions import (
    APPROVAL_EXT_URI,
    COMMANDS_EXT_URI,
    EVENT_MEDIA_TYPE,
    STATUS_EXT_KEY,
    STATUS_EXT_URI,
    TASK_EXT_KEY,
    TASK_EXT_URI,
)
from tiny_harness.core.settings import Settings

JSONRPC_PATH: Final = "/"
REST_PREFIX: Final = "/rest"
#: Where the extension schemas are served: ``/a2a/ext/task.json`` and so on.
SCHEMA_PATH: Final = "/a2a/ext"

DESCRIPTION: Final = (
    "An agent harness in which every task is a Kubernetes HarnessTask. Send a message to start "
    "a conversation task (a task envelope in the message metadata may set its goal and "
    "participants); the agent answers and waits for the next message, and a participant ends "
    "the task with a control message or CancelTask."
)


def registered_commands(settings: Settings) -> tuple[CommandSpec, ...]:
    """The commands the operator registers with the same settings: the built-ins, then those of
    the plugin folders in ``operator.plugin_dirs``. The gateway never runs one, so the model
    catalog the built-ins answer from is a stand-in."""
    stand_in = ModelCatalog(default="(operator)", selectable=("(operator)",))
    built = build_command_registry(
        stand_in, plugin_dirs=[Path(p) for p in settings.operator.plugin_dirs]
    )
    return built.registry.specs


def _extension(
    uri: str, description: str, schema: str, params: dict[str, object]
) -> AgentExtension:
    ext = AgentExtension(uri=uri, description=f"{description} Schema: {schema}", required=False)
    if params:
        ext.params.update(params)
    return ext


def build_agent_card(base_url: str, commands: Sequence[CommandSpec] = ()) -> AgentCard:
    """The card for a gateway reached at ``base_url``, advertising ``commands``."""
    base = base_url.rstrip("/")
    schemas = f"{base}{SCHEMA_PATH}"
    return AgentCard(
        name="tiny-harness",
        description=DESCRIPTION,
        version=__version__,
        # Both protocol versions on the same endpoints (0.3 through the SDK's compatibility
        # layer, see app.py); the card route adds the 0.3 card fields (url, preferredTransport
        # ...) from the 0.3 interfaces. 1.0 first: it is the version clients should prefer.
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=binding, protocol_version=version)
            for version in (PROTOCOL_VERSION_1_0, PROTOCOL_VERSION_0_3)
            for url, binding in (
                (f"{base}{JSONRPC_PATH}", TransportProtocol.JSONRPC.value),
                (f"{base}{REST_PREFIX}", TransportProtocol.HTTP_JSON.value),
            )
        ],
        capabilities=AgentCapabilities(
            streaming=True,
            push_notifications=False,
            extended_agent_card=False,
            extensions=[
                _extension(
                    TASK_EXT_URI,
                    f"The task under Task.metadata[{TASK_EXT_KEY!r}]; the same key in a first "
                    "message's metadata is a task envelope (goal, participants, plan ...). An "
                    "envelope that sets lifecycle, model or reasoning_effort is refused whole.",
                    f"{schemas}/task.json",
                    {},
                ),
                _extension(
                    STATUS_EXT_URI,
                    f"The sub-state of TASK_STATE_INPUT_REQUIRED under metadata[{STATUS_EXT_KEY!r}]"
                    " of the Task and of each TaskStatusUpdateEvent, e.g. "
                    "awaiting-next-message. Treat an unknown value as plain INPUT_REQUIRED.",
                    f"{schemas}/status.json",
                    {},
                ),
                _extension(
                    COMMANDS_EXT_URI,
                    "The /commands a participant may send as a message's only text part; "
                    "params.commands lists each with its argument hint. A participant ends a "
                    f"task with a data part of media type {EVENT_MEDIA_TYPE}: "
                    '{"kind": "control", "action": "complete"}.',
                    f"{schemas}/commands.json",
                    commands_params(commands),
                ),
                _extension(
                    APPROVAL_EXT_URI,
                    "Tool calls that wait for a participant's approval: the task is "
                    "TASK_STATE_INPUT_REQUIRED with sub-state awaiting-approval and the task "
                    "extension's approvals list them (call_id, tool, arguments, who decides, "
                    f"until when). Decide one with a data part of media type {EVENT_MEDIA_TYPE}:"
                    ' {"kind": "control", "action": "approve" or "reject", "call_id": ..., '
                    '"reason": ...}; the answer is the task\'s next status message.',
                    f"{schemas}/approval/v1.json",
                    {"sub_state": "awaiting-approval", "media_type": EVENT_MEDIA_TYPE},
                ),
            ],
        ),
        # What a model reads (text, data, images, PDFs), the control envelope, and any other
        # file, which is kept with the task and named to the model (core/attachments.py).
        default_input_modes=[*READ_TYPES, EVENT_MEDIA_TYPE, OPAQUE_TYPE],
        # Replies are text; artifacts may be text, JSON data or files.
        default_output_modes=["text/plain", "application/json"],
        skills=[
            AgentSkill(
                id="conversation",
                name="Conversation task",
                description="Work on a goal with one or more participants, one turn per message, "
                "until a participant completes or cancels the task.",
                tags=["conversation", "tasks", "kubernetes"],
                examples=["Summarise the open issues in this repository."],
                input_modes=[*READ_TYPES, OPAQUE_TYPE],
                output_modes=["text/plain", "application/json"],
            ),
            AgentSkill(
                id="commands",
                name="Task commands",
                description="/commands that inspect or adjust a task without calling the model; "
                "the commands extension lists them.",
                tags=["commands"],
                examples=[f"/{c.name} {c.argument_hint}".strip() for c in commands][:4],
            ),
        ],
    )
