"""Fault injection at the runtime's durability boundaries, for the reliability suite.

``TINY_HARNESS_FAILPOINT=<action>-after-write:<n>[@<task>]`` makes this process ``kill``
itself (SIGKILL) or ``stop`` itself (SIGSTOP) right after its n-th journal write (of ``task``
only, when named) has landed, before it takes another step. That is the exact moment a crash
or a long pause is hardest on the turn: the write is durable, nothing after it has happened.
``<action>-after-decision:<n>[@<task>]`` does the same right after the n-th approval decision
is recorded (status and journal), before the turn that runs the call starts.
The variable is read once; unset (as in every real deployment) the check is one comparison.
"""

from __future__ import annotations

import os
import re
import signal
from typing import Final

_SPEC: Final = re.compile(r"^(kill|stop)-after-(write|decision):(\d+)(?:@(.+))?$")


class _Failpoint:
    def __init__(self, spec: str | None) -> None:
        match = _SPEC.match(spec or "")
        self.signal = (
            None if match is None else (signal.SIGKILL if match[1] == "kill" else signal.SIGSTOP)
        )
        self.after = match[2] if match else ""
        self.at = int(match[3]) if match else 0
        self.task = match[4] if match else None
        self.writes = 0

    def passed(self, point: str, task: str) -> None:
        if self.signal is None or point != self.after:
            return
        if self.task is not None and task != self.task:
            return
        self.writes += 1
        if self.writes == self.at:
            os.kill(os.getpid(), self.signal)


_FAILPOINT: Final = _Failpoint(os.environ.get("TINY_HARNESS_FAILPOINT"))


def journal_written(task: str) -> None:
    """A journal write of ``task`` has landed: fire the failpoint if it waits for this one."""
    _FAILPOINT.passed("write", task)


def decision_recorded(task: str) -> None:
    """An approval decision on ``task`` is recorded: fire the failpoint if it waits for it."""
    _FAILPOINT.passed("decision", task)
