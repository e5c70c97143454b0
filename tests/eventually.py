"""The one way a test waits for something it cannot be told about: poll a probe until it answers.

A probe is a function that looks once and returns what it found: something truthy when the
condition holds (that value is what the wait returns), something falsy while it does not yet.
A probe whose "not yet" has more to say than ``False`` (what is still left, the state it is in)
returns :class:`NotYet` with it, and a timeout shows that.

A probe that looks at a new object often reads a field the object does not have yet (a
``status`` the operator has not written, a list still empty, a ``None`` where a mapping will
be). Those lookups raise :data:`NOT_YET_ERRORS` (``KeyError`` and ``IndexError``, both
``LookupError``, and ``TypeError``, as ``None["state"]`` does); the wait treats them as "not
yet", polls again, and names the last one if time runs out. Any other exception ends the wait
at once, as it would end the test: ``AssertionError`` (the probe saw something definitely
wrong: a process that exited, a state that cannot change back), and ``AttributeError``, more
often a misspelt name than a field still to come.

On timeout the wait fails with an ``AssertionError`` that names what it waited for, the last
value the probe returned and the last error it raised.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeVar, overload

T = TypeVar("T")

#: What a probe raises while the thing it reads is not there yet: retried, not a failure.
NOT_YET_ERRORS: Final[tuple[type[Exception], ...]] = (LookupError, TypeError)

#: How long to wait between two looks: short, so a wait ends soon after its condition holds.
INTERVAL: Final = 0.05

_NOTHING: Final = object()


@dataclass(frozen=True)
class NotYet:
    """A probe's "not yet" with what it saw instead (falsy; shown if the wait times out)."""

    seen: object

    def __bool__(self) -> Literal[False]:
        return False


class _Looks:
    """What a wait has seen so far, for the message when it times out."""

    def __init__(self, what: str, within: float) -> None:
        self.what = what
        self.within = within
        self.value: object = _NOTHING
        self.error: BaseException | None = None

    def timed_out(self) -> AssertionError:
        value = self.value.seen if isinstance(self.value, NotYet) else self.value
        seen = "nothing" if value is _NOTHING else repr(value)
        message = f"timed out after {self.within:g}s waiting for {self.what} (last value: {seen}"
        if self.error is not None:
            message += f"; last error: {self.error!r}"
        return AssertionError(message + ")")


def eventually(
    probe: Callable[[], T | NotYet | None],
    *,
    within: float,
    what: str,
    interval: float = INTERVAL,
    not_yet: tuple[type[Exception], ...] = (),
) -> T:
    """The first truthy value of ``probe()``, polled every ``interval`` seconds for at most
    ``within`` seconds; ``what`` says what is awaited ("the task to complete"). ``not_yet``
    adds errors that mean "not yet" here (a connection refused by a server still starting, an
    API server that is restarting) to :data:`NOT_YET_ERRORS`."""
    looks = _Looks(what, within)
    retried: tuple[type[Exception], ...] = (*NOT_YET_ERRORS, *not_yet)
    deadline = time.monotonic() + within
    while True:
        try:
            value = probe()
        except retried as error:
            looks.error = error
        else:
            if inspect.isawaitable(value):
                if inspect.iscoroutine(value):
                    value.close()
                raise TypeError(f"the probe for {what} is awaited: use eventually_async")
            if value:
                return value
            looks.value = value
        left = deadline - time.monotonic()
        if left <= 0:
            raise looks.timed_out() from looks.error
        time.sleep(min(interval, left))


@overload
async def eventually_async(
    probe: Callable[[], Awaitable[T | NotYet | None]],
    *,
    within: float,
    what: str,
    interval: float = INTERVAL,
    not_yet: tuple[type[Exception], ...] = (),
) -> T: ...


@overload
async def eventually_async(
    probe: Callable[[], T | NotYet | None],
    *,
    within: float,
    what: str,
    interval: float = INTERVAL,
    not_yet: tuple[type[Exception], ...] = (),
) -> T: ...


async def eventually_async(
    probe: Callable[[], Any],
    *,
    within: float,
    what: str,
    interval: float = INTERVAL,
    not_yet: tuple[type[Exception], ...] = (),
) -> Any:
    """:func:`eventually` in a running event loop, which goes on between looks. The probe may
    be awaited (a read through the API) or plain (a look at something the loop fills in, such
    as a list a subscription appends to; a plain probe that blocks, such as ``kubectl``, belongs
    in ``asyncio.to_thread``). The bound holds for the whole wait: a look still running when
    ``within`` has passed is cancelled."""
    looks = _Looks(what, within)
    retried: tuple[type[Exception], ...] = (*NOT_YET_ERRORS, *not_yet)
    bound = asyncio.timeout(within)
    try:
        async with bound:
            while True:
                try:
                    value = probe()
                    if inspect.isawaitable(value):
                        value = await value
                except retried as error:
                    looks.error = error
                else:
                    if value:
                        return value
                    looks.value = value
                await asyncio.sleep(interval)
    except TimeoutError:
        if not bound.expired():
            raise  # the probe's own timeout: an error of the probe, not the end of the wait
        raise looks.timed_out() from looks.error
