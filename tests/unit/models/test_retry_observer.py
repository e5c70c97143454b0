"""While a model call backs off, the turn's retry observer hears about each retry."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from adapter_kit import KINDS, TEST_KEY, Kind, MakeAdapter

from tiny_harness.core.llm import (
    ChatMessage,
    LLMRequest,
    RetryNotice,
    RetryObserver,
    retry_observer,
)
from tiny_harness.models import ModelUnavailableError
from tiny_harness.testing.model_script import ErrorTurn, TextTurn
from tiny_harness.testing.model_server import ScriptedModelServer

HI = LLMRequest(messages=(ChatMessage(role="user", content="hi"),))


class Recorder:
    """An observer that keeps every notice; ``fail`` makes it raise after recording."""

    def __init__(self, *, fail: bool = False, pause_seconds: float = 0.0) -> None:
        self.notices: list[RetryNotice] = []
        self.fail = fail
        self.pause_seconds = pause_seconds

    async def __call__(self, notice: RetryNotice) -> None:
        self.notices.append(notice)
        if self.pause_seconds:
            await asyncio.sleep(self.pause_seconds)
        if self.fail:
            raise RuntimeError("the status write failed")


@contextmanager
def observing(observer: RetryObserver) -> Iterator[None]:
    """Set the observer the way a host does around a turn, and put the old one back."""
    token = retry_observer.set(observer)
    try:
        yield
    finally:
        retry_observer.reset(token)


def test_there_is_no_observer_unless_a_host_sets_one() -> None:
    assert retry_observer.get() is None


@pytest.mark.parametrize("kind", KINDS)
async def test_each_retry_is_announced_once_with_a_growing_attempt_number(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind, max_retries=3)
    server.script([ErrorTurn(status=503, message="overloaded")] * 2 + [TextTurn(text="back")])
    recorder = Recorder()

    with observing(recorder):
        response = await adapter.complete(HI)

    assert response.text == "back"
    assert [(n.attempt, n.budget, n.reason) for n in recorder.notices] == [
        (1, 3, "HTTP 503: overloaded"),
        (2, 3, "HTTP 503: overloaded"),
    ]
    assert recorder.notices[0].summary == "retrying (1 of 3): HTTP 503: overloaded"


async def test_the_last_failure_is_not_announced_as_a_retry(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter("chat", max_retries=2)
    server.script([ErrorTurn(status=500, message="boom")] * 3)
    recorder = Recorder()

    with observing(recorder), pytest.raises(ModelUnavailableError):
        await adapter.complete(HI)

    assert [n.attempt for n in recorder.notices] == [1, 2]
    assert len(server.requests) == 3


async def test_a_refusal_is_never_announced(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter("responses")
    server.script([ErrorTurn(status=400, message="no")])
    recorder = Recorder()

    with observing(recorder), pytest.raises(Exception, match="no"):
        await adapter.complete(HI)

    assert recorder.notices == []


@pytest.mark.parametrize("kind", KINDS)
async def test_the_notice_carries_the_servers_retry_after(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind, retry_backoff_seconds=5)
    server.script(
        [ErrorTurn(status=429, message="slow down", retry_after_seconds=0.25), TextTurn(text="ok")]
    )
    recorder = Recorder()

    started = time.monotonic()
    with observing(recorder):
        await adapter.complete(HI)

    assert [(n.reason, n.delay_seconds) for n in recorder.notices] == [
        ("HTTP 429: slow down", 0.25)
    ]
    assert time.monotonic() - started >= 0.25


async def test_a_retry_after_beyond_the_cap_is_cut_to_the_cap(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter("chat", retry_max_backoff_seconds=0.05)
    server.script([ErrorTurn(status=429, retry_after_seconds=60), TextTurn(text="ok")])
    recorder = Recorder()

    with observing(recorder):
        await adapter.complete(HI)

    assert recorder.notices[0].delay_seconds == 0.05


async def test_an_http_date_retry_after_falls_back_to_our_own_backoff(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter("messages", retry_backoff_seconds=0.1)
    server.script(
        [
            ErrorTurn(status=503, headers={"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}),
            TextTurn(text="ok"),
        ]
    )
    recorder = Recorder()

    with observing(recorder):
        await adapter.complete(HI)

    # The first backoff is the initial one with jitter: between half of it and all of it.
    assert 0.05 <= recorder.notices[0].delay_seconds <= 0.1


async def test_a_timeout_is_announced_as_timed_out(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter("responses", timeout_seconds=0.2)
    server.script([TextTurn(text="late", delay_seconds=2), TextTurn(text="ok")])
    recorder = Recorder()

    with observing(recorder):
        await adapter.complete(HI)

    # The retry itself may time out too on a loaded machine: every notice says why, and the
    # first is the late answer's.
    reasons = [n.reason for n in recorder.notices]
    assert reasons
    assert set(reasons) == {"timed out"}


@pytest.mark.parametrize("kind", KINDS)
async def test_an_observer_that_fails_does_not_stop_the_retries(
    kind: Kind,
    server: ScriptedModelServer,
    make_adapter: MakeAdapter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    adapter = await make_adapter(kind, max_retries=3)
    server.script([ErrorTurn(status=502)] * 2 + [TextTurn(text="made it")])
    recorder = Recorder(fail=True)

    with caplog.at_level(logging.DEBUG, logger="tiny_harness.models.retry"), observing(recorder):
        response = await adapter.complete(HI)

    assert response.text == "made it"
    assert [n.attempt for n in recorder.notices] == [1, 2]
    assert sum("retry observer failed" in r.getMessage() for r in caplog.records) == 2


async def test_the_observers_own_time_counts_toward_the_wait(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter("chat")
    server.script([ErrorTurn(status=429, retry_after_seconds=0.4), TextTurn(text="ok")])
    recorder = Recorder(pause_seconds=0.4)

    started = time.monotonic()
    with observing(recorder):
        await adapter.complete(HI)

    # Added one after the other they would take 0.8s; overlapped, about 0.4s.
    assert 0.4 <= time.monotonic() - started < 0.7


async def test_a_notice_never_repeats_an_echoed_key(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter("chat")
    server.script([ErrorTurn(status=503, message=f"key {TEST_KEY} is busy"), TextTurn(text="ok")])
    recorder = Recorder()

    with observing(recorder):
        await adapter.complete(HI)

    assert recorder.notices[0].reason == "HTTP 503: key [redacted] is busy"


async def test_concurrent_turns_each_hear_only_their_own_retries(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    # One adapter serves every task; the observer belongs to the turn, not to the adapter.
    adapter = await make_adapter("chat")
    # Both first requests fail, and the wait keeps both of them ahead of either retry.
    server.script([ErrorTurn(status=503, retry_after_seconds=0.2)] * 2)
    mine, theirs = Recorder(), Recorder()

    async def turn(observer: Recorder) -> str:
        with observing(observer):
            return (await adapter.complete(HI)).text

    await asyncio.gather(turn(mine), turn(theirs))

    assert [n.attempt for n in mine.notices] == [1]
    assert [n.attempt for n in theirs.notices] == [1]
    assert retry_observer.get() is None
