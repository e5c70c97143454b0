"""The A2A extension URIs and metadata keys, exactly as clients of earlier versions know them.

They are the wire contract with every A2A client, so they live in one place and nothing else
spells them out.
"""

from typing import Final

_URI_BASE: Final = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext"
_KEY_BASE: Final = "io.github.madarauchiha-314.tiny-harness"

TASK_EXT_URI: Final = f"{_URI_BASE}/task/v1"
TASK_EXT_KEY: Final = f"{_KEY_BASE}/task"

STATUS_EXT_URI: Final = f"{_URI_BASE}/status/v1"
STATUS_EXT_KEY: Final = f"{_KEY_BASE}/status"

COMMANDS_EXT_URI: Final = f"{_URI_BASE}/commands/v1"

#: Calls that wait for a participant's approval, and the envelope that decides one.
APPROVAL_EXT_URI: Final = f"{_URI_BASE}/approval/v1"

#: kagent's human-in-the-loop extension (docs/a2a/ext/approval/v1.md says where it differs).
KAGENT_HITL_EXT_URI: Final = "https://kagent.dev/extensions/hitl/v1"

#: The media type of the event envelope a client sends as a data part (control actions).
EVENT_MEDIA_TYPE: Final = "application/vnd.tiny-harness.event+json"
