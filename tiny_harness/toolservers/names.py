"""The names the model calls a server's tools by: ``<server>__<tool>``.

Two servers may both have a ``search`` tool, and a server's tool may share a name with an
intrinsic (``create_plan``) or an operator tool. So every MCP tool is offered under a name
that starts with its server's: ``search__web_search`` is tool ``web_search`` of the
HarnessToolServer ``search``. The model is told the rule in its system prompt and in each
tool's description.

Providers accept ``^[a-zA-Z0-9_-]{1,64}$`` for a tool's name. Kubernetes names may hold dots
and MCP names dots and slashes, and the two together may be longer than 64, so a name that
does not fit is made to: each character outside the set becomes ``_``, the result is
shortened, and a short hash of the exact pair is added so that two pairs that would read
alike stay apart. The mapping is a pure function of the pair, so the same tool keeps its name
across restarts and replicas.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

SEPARATOR: Final = "__"
#: The longest name every provider accepts.
MAX_LENGTH: Final = 64
_ALLOWED: Final = re.compile(r"^[a-zA-Z0-9_-]+$")
_OUTSIDE: Final = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LENGTH: Final = 8


def exposed_name(server: str, tool: str) -> str:
    """The name tool ``tool`` of server ``server`` is offered to the model under."""
    plain = f"{server}{SEPARATOR}{tool}"
    # Kubernetes names have no underscore, so the first "__" of a plain name ends the server's.
    if "_" not in server and len(plain) <= MAX_LENGTH and _ALLOWED.match(plain):
        return plain
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:_HASH_LENGTH]
    room = MAX_LENGTH - len(SEPARATOR) - len(digest) - 1
    head = _OUTSIDE.sub("_", server)[: room // 2]
    tail = _OUTSIDE.sub("_", tool)[: room - len(head)]
    return f"{head}{SEPARATOR}{tail}_{digest}"


def is_valid(name: str) -> bool:
    """Would a provider accept ``name`` as a tool's name?"""
    return len(name) <= MAX_LENGTH and bool(_ALLOWED.match(name))
