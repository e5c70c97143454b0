"""SSE event ids (``a2a_gateway/event_ids.py``): each data event of a stream gets the version
noted for it, checked against its text; pings and other responses are left alone; a
Last-Event-ID that is not one of ours is refused, naming the header."""

from __future__ import annotations

import json
from typing import Any

import pytest
from a2a.utils.errors import InvalidParamsError

from tiny_harness.a2a_gateway.event_ids import EventIds, last_event_id, note


def event(version: int) -> bytes:
    text = json.dumps({"result": {"metadata": {"x": {"version": str(version)}}}})
    return b"data: " + text.encode() + b"\r\n\r\n"


async def run(content_type: bytes, bodies: list[bytes], versions: list[int | None]) -> list[bytes]:
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        for version in versions:
            note(scope["state"], version)
        headers = [(b"content-type", content_type)]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for body in bodies:
            await send({"type": "http.response.body", "body": body, "more_body": True})

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:  # pragma: no cover - not read
        return {}

    await EventIds(app)({"type": "http", "state": {}}, receive, send)
    return [m["body"] for m in sent if m["type"] == "http.response.body"]


async def test_each_data_event_gets_its_version_and_pings_get_none() -> None:
    bodies = await run(
        b"text/event-stream; charset=utf-8",
        [event(11), b": ping - 2026-12-02\r\n\r\n", event(14)],
        [11, 14],
    )
    assert bodies[0].startswith(b"id: 11\r\ndata: ")
    assert bodies[1].startswith(b": ping")
    assert bodies[2].startswith(b"id: 14\r\ndata: ")


async def test_an_event_that_does_not_carry_its_version_gets_no_id() -> None:
    bodies = await run(b"text/event-stream", [event(12)], [13])
    assert bodies == [event(12)]


async def test_a_json_answer_is_left_alone() -> None:
    bodies = await run(b"application/json", [b'data: {"version":"3"}'], [3])
    assert bodies == [b'data: {"version":"3"}']


def test_last_event_id() -> None:
    assert last_event_id({}) is None
    assert last_event_id({"last_event_id": None}) is None
    assert last_event_id({"last_event_id": " 42 "}) == 42
    with pytest.raises(InvalidParamsError, match="Last-Event-ID"):
        last_event_id({"last_event_id": "abc"})
    with pytest.raises(InvalidParamsError, match="Last-Event-ID"):
        last_event_id({"last_event_id": "9" * 30})
