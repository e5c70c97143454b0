"""What one participant's streams may hold on a replica: how many at once, and for how long.

Each open stream holds a connection, a queue and a task of the event loop for as long as its
client keeps it, so a team bounds them (``[gateway]`` settings, chart values):

- ``max_streams_per_participant``: a participant's open ``SubscribeToTask`` and
  ``SendStreamingMessage`` streams on this replica; the next one is refused (429) with a
  message saying how many are open (code ``too_many_streams``: a client stops following
  rather than try again), and nothing else of the call happens. A send refused so writes no
  message.
- ``stream_lifetime_seconds``: a stream open that long ends cleanly (:attr:`.fanout.Ended.
  LIFETIME`); the client subscribes again with the last event id it read and loses nothing.

The count is this replica's: N replicas let a participant hold N times the limit, which bounds
what each replica spends on one participant, the point of the limit.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from a2a.utils.errors import UnsupportedOperationError

from tiny_harness.a2a_gateway.quotas import Refused
from tiny_harness.core.reason_codes import ReasonCode, coded
from tiny_harness.core.settings import GatewaySettings

#: The metrics outcome of a stream refused for the participant's open streams.
TOO_MANY_STREAMS = "too_many_streams"

_DEFAULTS = GatewaySettings.model_fields


@dataclass
class StreamLimits:
    """The open streams by participant, against their limit, and a stream's lifetime."""

    per_participant: int = _DEFAULTS["max_streams_per_participant"].default
    lifetime_seconds: float = _DEFAULTS["stream_lifetime_seconds"].default
    open: Counter[str] = field(default_factory=Counter)

    @classmethod
    def of(cls, settings: GatewaySettings) -> StreamLimits:
        return cls(settings.max_streams_per_participant, settings.stream_lifetime_seconds)

    @contextlib.contextmanager
    def slot(self, participant: str) -> Iterator[None]:
        """One of ``participant``'s streams while the block runs; refused (:class:`Refused`,
        429) when they hold as many as they may. The check and the count are one step."""
        if self.open[participant] >= self.per_participant:
            raise Refused(
                coded(
                    UnsupportedOperationError,
                    ReasonCode.TOO_MANY_STREAMS,
                    f"{participant} has {self.open[participant]} streams open on this gateway, "
                    "as many as a participant may (gateway.max_streams_per_participant); close "
                    "one, or read the task with GetTask",
                ),
                status=429,
                outcome=TOO_MANY_STREAMS,
            )
        self.open[participant] += 1
        try:
            yield
        finally:
            self.open[participant] -= 1
            if not self.open[participant]:
                del self.open[participant]

    def deadline(self) -> float:
        """When a stream opened now ends (the event loop's clock)."""
        return asyncio.get_running_loop().time() + self.lifetime_seconds
