"""Why the gateway refused a call or ended a stream, as a code a client switches on.

The gateway's refusals are sentences a person can act on, and they may be reworded; a program
must never read them. Every refusal therefore carries one of these codes, and so does every
end of a stream the gateway makes itself (the task extension's "Refusals and stream ends",
``docs/a2a/ext/task.md``, lists them with their meaning):

- in an A2A error, under ``reason`` in its data: the ``metadata`` of the ``google.rpc.ErrorInfo``
  the SDK puts in the error's details (JSON-RPC ``error.data``, HTTP+JSON ``error.details``),
  which refines A2A's own reason (``UNSUPPORTED_OPERATION``) the way a sub-state refines a
  state; a Python SDK client reads it as ``error.data["reason"]``;
- in a refusal the gateway answers before any A2A method runs (401, 413, 429, a malformed
  body), the same: ``reason`` in the metadata of the ``ErrorInfo`` in its ``details``;
- in the note that ends a send's wait when no status change ended it, under ``reason`` in the
  task extension of that event's metadata.

A code is stable: a new one may be added, none is renamed. A client treats a code it does not
know as no code (:func:`reason_in`), and acts on the A2A error's type as before. The web UI's
``web/src/reasons.ts`` holds the same codes, checked against these by a test.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final, TypeVar

from a2a.utils.errors import A2AError

#: The key a code is carried under: in an error's data, or in the task extension of a note.
REASON_KEY: Final = "reason"
#: The ``domain`` of the ``ErrorInfo`` a refusal made before any A2A method carries (an A2A
#: error's is A2A's own, ``a2a-protocol.org``).
ERROR_DOMAIN: Final = "tiny-harness.madarauchiha-314.github.io"
#: The type of a ``google.rpc.ErrorInfo`` in an error's details.
ERROR_INFO_TYPE: Final = "type.googleapis.com/google.rpc.ErrorInfo"


class ReasonCode(StrEnum):
    """Why the gateway refused a call, or ended a stream."""

    # -- before any A2A method runs --
    #: No participant is named, or the credentials are not accepted (401).
    UNAUTHENTICATED = "unauthenticated"
    #: The participant's requests passed ``gateway.rate_limit_per_minute`` (429, Retry-After).
    RATE_LIMITED = "rate_limited"
    #: Too many refused bearer tokens from one address (429, Retry-After).
    TOO_MANY_REFUSED_TOKENS = "too_many_refused_tokens"
    #: The request body is larger than ``gateway.max_request_bytes`` (413).
    BODY_TOO_LARGE = "body_too_large"
    #: The request body nests deeper than a request may (400).
    BODY_TOO_DEEP = "body_too_deep"

    # -- the request --
    #: A request parameter is not valid (history length, page size or token, status filter,
    #: Last-Event-ID, a required field): change it.
    INVALID_PARAMS = "invalid_params"
    #: The message cannot be stored as it is (its parts, its control, its role, its context,
    #: an envelope it may not carry): change it.
    INVALID_MESSAGE = "invalid_message"
    #: A task envelope sets a field only the server writes (lifecycle, model, effort).
    SERVER_CONTROLLED_FIELD = "server_controlled_field"
    #: The message carries more than any message may (413): split it, or send a link.
    MESSAGE_TOO_LARGE = "message_too_large"
    #: The write would pass a quota (429; 413 when it never fits); the data names the quota.
    OVER_QUOTA = "over_quota"

    # -- the task --
    #: There is no such task, or the caller is not on it.
    TASK_NOT_FOUND = "task_not_found"
    #: The task has ended for good: it is read, not followed, sent to or cancelled.
    TASK_ENDED = "task_ended"
    #: The caller's role does not allow it (a watcher ending a task, a sub-task of a task one
    #: may not start one of).
    ROLE_REFUSED = "role_refused"
    #: The parent a first message names is not a task the caller is on.
    PARENT_NOT_FOUND = "parent_not_found"
    #: A sub-task there would be deeper than the tree may grow.
    SUB_TASK_TOO_DEEP = "sub_task_too_deep"

    # -- streams --
    #: The participant holds as many open streams as they may (429): following again would be
    #: refused again; close one, or read the task.
    TOO_MANY_STREAMS = "too_many_streams"
    #: The stream's reader fell behind and the gateway ended it: subscribe again with the
    #: Last-Event-ID the data names (``last_event_id``).
    STREAM_BEHIND = "stream_behind"

    # -- the note that ends a send's wait --
    #: The journal holds the message's answer (a refusal, or a command's reply whose status
    #: write was lost).
    ANSWERED = "answered"
    #: No operator took the message in time; it stays queued.
    NOT_TAKEN = "not_taken"
    #: Nothing changed for a while; the task is still at work.
    STILL_WORKING = "still_working"

    # -- the gateway --
    #: The gateway does not offer this (push notifications, an extended card, deleting a
    #: task, writing a task's state).
    NOT_OFFERED = "not_offered"
    #: The gateway is still reading what is stored: try again in a moment.
    NOT_READY = "not_ready"


E = TypeVar("E", bound=A2AError)


def coded(error: type[E], code: ReasonCode, message: str, **fields: str) -> E:
    """The A2A error ``error`` saying ``message``, carrying ``code`` (and ``fields``, strings,
    as ErrorInfo metadata holds) in its data."""
    return error(message=message, data={REASON_KEY: code.value, **fields})


def error_info(code: ReasonCode) -> dict[str, object]:
    """The ``google.rpc.ErrorInfo`` of a refusal made before any A2A method (a 401, 413, 429),
    in the same place and shape an A2A error's is: its reason the code in capitals, as
    ErrorInfo's reasons are, and the code itself under ``reason`` in its metadata."""
    return {
        "@type": ERROR_INFO_TYPE,
        "reason": code.value.upper(),
        "domain": ERROR_DOMAIN,
        "metadata": {REASON_KEY: code.value},
    }


def reason_in(data: Mapping[str, object] | None) -> ReasonCode | None:
    """The code ``data`` carries (an error's data, a note's task extension), or None: none,
    or one this version does not know."""
    if not data:
        return None
    raw = data.get(REASON_KEY)
    try:
        return ReasonCode(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


def reason_of(error: BaseException | None) -> ReasonCode | None:
    """The code an A2A error carries, or that of the error it was raised from (a client may
    wrap the SDK's error); None when none does."""
    seen = error
    for _ in range(4):
        if seen is None:
            return None
        if isinstance(seen, A2AError):
            found = reason_in(seen.data)
            if found is not None:
                return found
        seen = seen.__cause__
    return None
