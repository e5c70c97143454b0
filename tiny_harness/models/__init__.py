"""Model adapters: the core's model port over the official OpenAI and Anthropic SDKs.

The core loop only knows :class:`~tiny_harness.core.llm.ModelAdapter`; this package supplies
three of them (OpenAI Responses, OpenAI Chat Completions, Anthropic Messages), the typed
provider settings they are built from, and the bounded retry loop they share. Hosts call::

    settings = parse_provider_settings("openai", config["openai"])
    adapter = build_adapter(settings)      # key from OPENAI_API_KEY
    catalog = catalog_for(settings)        # for /model, /effort and context windows

The adapter classes live in their provider's module (``openai_responses``, ``openai_chat``,
``anthropic_messages``), imported only by the one that is configured.
"""

from tiny_harness.models.call_errors import (
    MODEL_CALL_REASONS,
    ModelCallError,
    ModelCallReason,
    ModelRequestRejectedError,
    ModelUnavailableError,
)
from tiny_harness.models.config import (
    AnthropicSettings,
    OpenAISettings,
    ProviderSettings,
    catalog_for,
    parse_provider_settings,
)
from tiny_harness.models.factory import Adapter, build_adapter, resolve_api_key
from tiny_harness.models.retry import CallContext, RetryPolicy

__all__ = [
    "MODEL_CALL_REASONS",
    "Adapter",
    "AnthropicSettings",
    "CallContext",
    "ModelCallError",
    "ModelCallReason",
    "ModelRequestRejectedError",
    "ModelUnavailableError",
    "OpenAISettings",
    "ProviderSettings",
    "RetryPolicy",
    "build_adapter",
    "catalog_for",
    "parse_provider_settings",
    "resolve_api_key",
]
