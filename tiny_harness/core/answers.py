"""The ids of the answers a message gets outside any turn, and how a reader tells it was
answered.

A command runs without the model, and a refused message never reaches it, so no turn answers
either. The operator records the answer in the journal under an id made from the message's id
(below): a reader that holds the message's id knows which entry answers it, whichever front
end it is. A command's reply is also written as the task's status message, with the same id,
so whoever waits on the task (``kubectl harness``, an A2A client's stream or call) hears it in
the status event; a refusal is not (a stranger could otherwise write the status text of any
task), and is read from the journal.
"""

from __future__ import annotations


def command_reply_id(message_id: str) -> str:
    """The journal entry (and status message) that answers the command sent as ``message_id``."""
    return f"cmd-{message_id}"


def refusal_id(message_id: str) -> str:
    """The journal notice that says why the message sent as ``message_id`` was refused."""
    return f"refused-{message_id}"
