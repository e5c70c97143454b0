"""Shared names for the adapter tests (a plain module, so tests can import it by name)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from tiny_harness.models import Adapter
from tiny_harness.testing.model_server import ScriptedModelServer

Kind = Literal["responses", "chat", "messages"]
KINDS: tuple[Kind, ...] = ("responses", "chat", "messages")
PATHS: dict[Kind, str] = {
    "responses": "/v1/responses",
    "chat": "/v1/chat/completions",
    "messages": "/v1/messages",
}
#: The explicit key every test adapter is built with; no recorded request may contain it.
TEST_KEY = "sk-test-secret-0123456789"

MakeAdapter = Callable[..., Awaitable[Adapter]]


def provider_of(kind: Kind) -> str:
    return "anthropic" if kind == "messages" else "openai"


def settings_section(kind: Kind, server: ScriptedModelServer, **overrides: Any) -> dict[str, Any]:
    """A configuration section for ``kind`` pointed at ``server``, with zero retry backoff."""
    section: dict[str, Any] = {
        "model": "model-default",
        "base_url": server.anthropic_base_url if kind == "messages" else server.openai_base_url,
        "retry_backoff_seconds": 0,
        "timeout_seconds": 5,
    }
    if kind != "messages":
        section["api"] = kind
    section.update(overrides)
    return section
