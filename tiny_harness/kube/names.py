"""The API group, version and names of the ``HarnessTask`` resource, and our label and
annotation prefixes.

The group is the project's own, consistent with the A2A extension namespace
``madarauchiha-314.github.io/tiny-harness``.
"""

from collections.abc import Mapping
from typing import Any, Final

GROUP: Final = "tiny-harness.madarauchiha-314.github.io"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "HarnessTask"
PLURAL: Final = "harnesstasks"
SINGULAR: Final = "harnesstask"
SHORT_NAME: Final = "ht"

MESSAGE_KIND: Final = "HarnessMessage"
MESSAGE_PLURAL: Final = "harnessmessages"
MESSAGE_SHORT_NAME: Final = "hmsg"

TURN_KIND: Final = "HarnessTurn"
TURN_PLURAL: Final = "harnessturns"
TURN_SHORT_NAME: Final = "hturn"

AGENT_KIND: Final = "HarnessAgent"
AGENT_PLURAL: Final = "harnessagents"
AGENT_SHORT_NAME: Final = "hagent"
TOOL_SERVER_KIND: Final = "HarnessToolServer"
TOOL_SERVER_PLURAL: Final = "harnesstoolservers"
TOOL_SERVER_SHORT_NAME: Final = "htool"

#: Prefix of our labels, annotations and finalizers. Every label and annotation under it is
#: written by the harness alone (a participant's message may carry the task and shard labels
#: it copies from its task, and a sender label naming its writer): the identity admission
#: policy refuses anyone else's, kube/admission.py.
PREFIX: Final = GROUP
PARENT_LABEL: Final = f"{PREFIX}/parent"
#: On messages and turn records: the name of the task they belong to.
TASK_LABEL: Final = f"{PREFIX}/task"
TURN_LABEL: Final = f"{PREFIX}/turn"
#: On a task, its messages, its turn records and its children: the shard of the task tree
#: (see tiny_harness/operator/shard_deal.py). Sharded operators watch only their shards' objects
#: by this label, so an event reaches only the replica that works its task.
SHARD_LABEL: Final = f"{PREFIX}/shard"
#: On a message, its sender; on a task the gateway creates, the participant whose first
#: message created it (``kube.labels.label_value`` of the id): what the gateway's quotas count
#: per participant, from a listing of metadata alone (a2a_gateway/tally.py).
SENDER_LABEL: Final = f"{PREFIX}/sender"
#: On a message: the bytes it carries (``core.sizes.message_bytes``), so the bytes a
#: participant keeps stored are summed from metadata, never from the messages' bodies. Written
#: by the harness alone: the gateway and operator with what they send, the operator on a
#: message a participant wrote (operator/measurer.py).
BYTES_ANNOTATION: Final = f"{PREFIX}/bytes"
#: The task's A2A context id: the one its first message named (or the gateway chose), or, on a
#: child task, its parent's. A task without it is its own context (its name).
CONTEXT_ID_ANNOTATION: Final = f"{PREFIX}/context-id"
#: On a child the operator creates: the lifecycle it is created with (delegated, conversation
#: or participant), so whichever of its writers initialises it first (the parent's worker
#: or the child's own) writes the same first status. Only the harness may set it (the
#: identity admission policy refuses anyone else's, kube/admission.py).
LIFECYCLE_ANNOTATION: Final = f"{PREFIX}/lifecycle"
#: On a task created by its first message (the gateway creates the task, then writes the
#: message: the message's object name holds the task's uid, so it cannot come first): that
#: message's id (``MessageSpec.message_id``). Until the message is seen, or for at most
#: ``[operator] first_message_seconds``, the operator keeps the new conversation SUBMITTED
#: instead of parking it as awaiting its next message (core/decide.py, row 11).
FIRST_MESSAGE_ANNOTATION: Final = f"{PREFIX}/first-message"
#: On a HarnessAgent: change it (any value) to have the operator read the agent's card again,
#: as after a change of its spec (it gives up after a bounded number of failed attempts).
RESOLVE_ANNOTATION: Final = f"{PREFIX}/resolve"


def context_id_of(obj: Mapping[str, Any]) -> str:
    """The A2A context id of a stored task (see :data:`CONTEXT_ID_ANNOTATION`)."""
    annotations = obj["metadata"].get("annotations") or {}
    return str(annotations.get(CONTEXT_ID_ANNOTATION) or obj["metadata"]["name"])
