"""The journal key goes out as the JSON-RPC id of a tools/call, and only of a tools/call: the
SDK's own dispatcher, driven over in-memory streams, shows the ids it writes."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types
import pytest
from mcp.shared.message import SessionMessage

from tiny_harness.toolservers.keyed import KeyedDispatcher, keyed_options, request_id


async def _ignore(*_: Any) -> None:
    return None


async def sent_ids(*requests: tuple[str, str | None]) -> list[Any]:
    """Send each ``(method, key)`` through a KeyedDispatcher; the ids it wrote, in order."""
    to_client_send, to_client_read = anyio.create_memory_object_stream[SessionMessage | Exception](
        8
    )
    from_client_send, from_client_read = anyio.create_memory_object_stream[SessionMessage](8)
    dispatcher = KeyedDispatcher(to_client_read, from_client_send)
    ids: list[Any] = []
    async with anyio.create_task_group() as tg:
        await tg.start(dispatcher.run, _ignore, _ignore)
        for method, key in requests:

            async def send(method: str = method, key: str | None = key) -> None:
                if key is None:
                    await dispatcher.send_raw_request(method, {"name": "weather"})
                    return
                with request_id(key):
                    await dispatcher.send_raw_request(method, {"name": "weather"})

            tg.start_soon(send)
            written = await from_client_read.receive()
            message = written.message
            assert isinstance(message, mcp_types.JSONRPCRequest)
            ids.append(message.id)
            answer = mcp_types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result={})
            await to_client_send.send(SessionMessage(answer))
        await to_client_send.aclose()
    return ids


async def test_a_tool_call_goes_out_under_its_journal_key() -> None:
    ids = await sent_ids(("tools/call", "t1/turn-3/tool-0-call_abc"))

    assert ids == ["t1/turn-3/tool-0-call_abc"]


async def test_other_requests_and_unkeyed_calls_keep_the_sdks_own_ids() -> None:
    ids = await sent_ids(("tools/list", "t1/turn-3/tool-0-call_abc"), ("tools/call", None))

    assert all(isinstance(i, int) for i in ids), ids


@pytest.mark.parametrize(
    ("method", "key", "expected"),
    [
        ("tools/call", "k", {"timeout": 5.0, "request_id": "k"}),
        ("tools/list", "k", {"timeout": 5.0}),
        ("tools/call", None, {"timeout": 5.0}),
    ],
)
def test_keyed_options_add_the_key_only_to_a_keyed_tool_call(
    method: str, key: str | None, expected: dict[str, Any]
) -> None:
    if key is None:
        assert keyed_options(method, {"timeout": 5.0}) == expected
        return
    with request_id(key):
        assert keyed_options(method, {"timeout": 5.0}) == expected
