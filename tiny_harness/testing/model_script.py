"""The script of the scripted model server: the turns a test queues, and what it reads back.

A test scripts the model's answers as turns, in order (:class:`TextTurn`, :class:`ToolCallsTurn`,
:class:`ErrorTurn`), and reads back every request the SDKs sent (:class:`RecordedRequest`). The
same turns are given to a server in this process
(:meth:`~tiny_harness.testing.model_server.ScriptedModelServer.script`), in a script file
(``--script``), or to a server in another process over its control endpoints
(:class:`ModelServerControl`: ``POST /_script``, ``GET /_requests``, ``POST /_reset``). How a
turn is written in each provider's wire format is :mod:`tiny_harness.testing.model_wire`'s.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

import aiohttp
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

#: What the server answers once its script has run out.
DEFAULT_REPLY_TEXT: Final = "Done."


class ScriptedTurn(BaseModel):
    """What every turn has: when it answers, and after how long."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    delay_seconds: float = Field(default=0.0, ge=0, description="Wait this long, then answer.")
    when: str | None = Field(
        default=None,
        description="Answer only a request whose body contains this text; until one comes, "
        "later turns answer the others. For tests where two tasks call at once and the order "
        "of their calls is not the test's to choose.",
    )


class TextTurn(ScriptedTurn):
    """Answer with text and no tool calls. Token counts default to rough estimates."""

    type: Literal["text"] = "text"
    text: str
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cached_input_tokens: int = Field(
        default=0, ge=0, description="Of the input tokens, those to report as cached."
    )


class ScriptedToolCall(BaseModel):
    """One tool call to answer with; ``arguments`` as an object or as raw JSON text."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = Field(default=None, description="Generated when unset.")


class ToolCallsTurn(ScriptedTurn):
    """Answer with one or more tool calls, optionally with some text before them."""

    type: Literal["tool_calls"] = "tool_calls"
    calls: tuple[ScriptedToolCall, ...] = Field(min_length=1)
    text: str = ""
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cached_input_tokens: int = Field(
        default=0, ge=0, description="Of the input tokens, those to report as cached."
    )


class ErrorTurn(ScriptedTurn):
    """Answer with an HTTP error in the provider's error shape (429 and 5xx get retried).

    ``context_too_long`` answers with each provider's own 400 for a conversation longer than
    the model's window (the endpoint hit decides which), so a test of that path does not have
    to know which adapter it drives.
    """

    type: Literal["error"] = "error"
    status: int = Field(ge=400, le=599)
    message: str = "scripted failure"
    retry_after_seconds: float | None = Field(default=None, ge=0)
    code: str | None = Field(
        default=None, description="OpenAI's `error.code`; Anthropic errors have none."
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Extra response headers, set last (e.g. an HTTP-date `retry-after`).",
    )
    context_too_long: bool = Field(
        default=False,
        description="The provider's real context-overflow error; status must be 400, and "
        "message and code are replaced.",
    )

    @model_validator(mode="after")
    def _context_too_long_is_a_400(self) -> ErrorTurn:
        if self.context_too_long and self.status != 400:
            raise ValueError("context_too_long is a 400 at every provider; set status to 400")
        return self


Turn = Annotated[TextTurn | ToolCallsTurn | ErrorTurn, Field(discriminator="type")]
_TURNS: TypeAdapter[list[TextTurn | ToolCallsTurn | ErrorTurn]] = TypeAdapter(list[Turn])


def parse_turns(data: Any) -> list[TextTurn | ToolCallsTurn | ErrorTurn]:
    """Turns from JSON data: a list of turns, or ``{"turns": [...]}``."""
    if isinstance(data, Mapping):
        data = data.get("turns", [])
    return _TURNS.validate_python(data)


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it. ``body`` is None when it was not JSON."""

    path: str
    headers: Mapping[str, str]
    body: Any
    raw_body: bytes

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "headers": dict(self.headers),
            "body": self.body,
            "raw_body_base64": base64.b64encode(self.raw_body).decode("ascii"),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecordedRequest:
        return cls(
            path=data["path"],
            headers=dict(data["headers"]),
            body=data["body"],
            raw_body=base64.b64decode(data["raw_body_base64"]),
        )


class ModelServerControl:
    """Drives a server in another process over its control endpoints."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    async def script(self, turns: Iterable[Turn | Mapping[str, Any]]) -> None:
        payload = [t if isinstance(t, Mapping) else t.model_dump(mode="json") for t in turns]
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.base_url}/_script", json={"turns": payload}) as response,
        ):
            response.raise_for_status()

    async def requests(self) -> list[RecordedRequest]:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{self.base_url}/_requests") as response,
        ):
            response.raise_for_status()
            data = await response.json()
        return [RecordedRequest.from_json(item) for item in data["requests"]]

    async def reset(self) -> None:
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.base_url}/_reset") as response,
        ):
            response.raise_for_status()
