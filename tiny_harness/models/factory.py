"""Turn validated provider settings into a ready adapter, with its key and its SDK client.

This is the only place an API key is read. It goes straight into the SDK client and is kept
nowhere else: not in the settings, not on the adapter, not in any message.

Only the configured provider's SDK is imported (inside :func:`build_adapter`): each is tens of
megabytes of a long-running operator's memory, and a process talks to one provider.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from tiny_harness.core.errors import ConfigError
from tiny_harness.models.base import RetryingAdapter
from tiny_harness.models.config import AnthropicSettings, OpenAISettings
from tiny_harness.models.retry import CallContext

#: Any of the three adapters (OpenAI Responses, OpenAI Chat Completions, Anthropic Messages).
Adapter = RetryingAdapter[Any, Any]


def resolve_api_key(
    settings: OpenAISettings | AnthropicSettings,
    api_key: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """The key to use: ``api_key`` if given, else the settings' environment variable.

    Raises :class:`ConfigError` keyed by the variable's name when there is none.
    """
    if api_key:
        return api_key
    env = os.environ if environ is None else environ
    name = settings.key_env
    value = env.get(name, "")
    if not value:
        local_hint = (
            " (a local OpenAI-compatible server that ignores keys still needs a placeholder "
            "such as 'unused')"
            if settings.provider_key == "openai"
            else ""
        )
        raise ConfigError(
            name,
            f"no API key for the {settings.provider_key} provider; set the {name} environment "
            f"variable{local_hint}",
        )
    return value


def build_adapter(
    settings: OpenAISettings | AnthropicSettings,
    *,
    api_key: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Adapter:
    """The adapter these settings describe. Call ``await adapter.aclose()`` when done."""
    key = resolve_api_key(settings, api_key, environ)
    # The SDKs' own retries are off: models.retry owns the budget and the backoff.
    if isinstance(settings, AnthropicSettings):
        from anthropic import AsyncAnthropic

        from tiny_harness.models.anthropic_messages import AnthropicMessagesAdapter

        return AnthropicMessagesAdapter(
            AsyncAnthropic(
                api_key=key,
                base_url=settings.base_url,
                timeout=settings.timeout_seconds,
                max_retries=0,
            ),
            default_model=settings.model,
            max_output_tokens=settings.max_output_tokens,
            retry_policy=settings.retry_policy,
            context=CallContext("anthropic", settings.key_env, "anthropic"),
        )
    from openai import AsyncOpenAI

    from tiny_harness.models.openai_chat import OpenAIChatAdapter
    from tiny_harness.models.openai_responses import OpenAIResponsesAdapter

    client = AsyncOpenAI(
        api_key=key, base_url=settings.base_url, timeout=settings.timeout_seconds, max_retries=0
    )
    if settings.api == "chat":
        return OpenAIChatAdapter(
            client,
            default_model=settings.model,
            retry_policy=settings.retry_policy,
            context=CallContext("openai chat", settings.key_env, "openai"),
        )
    return OpenAIResponsesAdapter(
        client,
        default_model=settings.model,
        retry_policy=settings.retry_policy,
        context=CallContext("openai responses", settings.key_env, "openai"),
    )
