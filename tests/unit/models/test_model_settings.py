"""Provider settings fail closed, naming the key to fix; API keys come only from outside."""

from __future__ import annotations

from typing import Any

import pytest

from tiny_harness.core.errors import ConfigError
from tiny_harness.models import (
    AnthropicSettings,
    OpenAISettings,
    build_adapter,
    catalog_for,
    parse_provider_settings,
)
from tiny_harness.models.anthropic_messages import AnthropicMessagesAdapter
from tiny_harness.models.openai_chat import OpenAIChatAdapter
from tiny_harness.models.openai_responses import OpenAIResponsesAdapter


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(
    "models",
    [[], ["some-other-model"]],
    ids=["empty", "without-the-default"],
)
def test_a_models_list_that_is_empty_or_lacks_the_default_is_refused_by_key(
    provider: str, models: list[str]
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_provider_settings(provider, {"model": "the-default", "models": models})

    assert caught.value.key == f"{provider}.models"


def test_building_settings_directly_refuses_a_bad_models_list_the_same_way() -> None:
    with pytest.raises(ConfigError) as caught:
        AnthropicSettings(model="claude-a", models=("claude-b",))

    assert caught.value.key == "anthropic.models"


def test_an_unset_models_list_offers_only_the_default_model() -> None:
    settings = parse_provider_settings("openai", {"model": "gpt-x"})

    assert settings.selectable_models == ("gpt-x",)


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({}, "openai.model"),
        ({"model": "m", "reasoning_effort": "extreme"}, "openai.reasoning_effort"),
        ({"model": "m", "api": "completions"}, "openai.api"),
        ({"model": "m", "timeout_seconds": 0}, "openai.timeout_seconds"),
        ({"model": "m", "max_retries": -1}, "openai.max_retries"),
        ({"model": "m", "context_window_tokens": 0}, "openai.context_window_tokens"),
        ({"model": "m", "api_key": "sk-inline"}, "openai.api_key"),
    ],
)
def test_every_invalid_setting_is_a_config_error_naming_its_key(
    section: dict[str, Any], key: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_provider_settings("openai", section)

    assert caught.value.key == key


def test_an_unknown_provider_is_refused() -> None:
    with pytest.raises(ConfigError, match="anthropic, openai") as caught:
        parse_provider_settings("gemini", {"model": "m"})

    assert caught.value.key == "provider"


@pytest.mark.parametrize(
    ("settings", "env"),
    [
        (OpenAISettings(model="m"), "OPENAI_API_KEY"),
        (AnthropicSettings(model="m"), "ANTHROPIC_API_KEY"),
        (OpenAISettings(model="m", api_key_env="VLLM_KEY"), "VLLM_KEY"),
    ],
)
def test_a_missing_api_key_is_a_config_error_naming_the_variable(
    settings: OpenAISettings | AnthropicSettings, env: str
) -> None:
    with pytest.raises(ConfigError, match=f"set the {env} environment variable") as caught:
        build_adapter(settings, environ={"UNRELATED": "x", env: ""})

    assert caught.value.key == env


async def test_the_key_is_read_from_the_environment_and_kept_out_of_reprs() -> None:
    settings = OpenAISettings(model="m")

    adapter = build_adapter(settings, environ={"OPENAI_API_KEY": "sk-from-env-42"})

    assert "sk-from-env-42" not in repr(settings) + repr(adapter) + repr(vars(adapter))
    await adapter.aclose()


@pytest.mark.parametrize(
    ("settings", "adapter_type"),
    [
        (OpenAISettings(model="m"), OpenAIResponsesAdapter),
        (OpenAISettings(model="m", api="chat"), OpenAIChatAdapter),
        (AnthropicSettings(model="m"), AnthropicMessagesAdapter),
    ],
)
async def test_the_factory_builds_the_adapter_the_settings_name(
    settings: OpenAISettings | AnthropicSettings, adapter_type: type
) -> None:
    adapter = build_adapter(settings, api_key="sk-explicit")

    assert isinstance(adapter, adapter_type)
    assert adapter.default_model == "m"
    await adapter.aclose()


def test_the_catalog_follows_the_settings() -> None:
    settings = parse_provider_settings(
        "anthropic",
        {
            "model": "claude-a",
            "models": ["claude-a", "claude-b"],
            "reasoning_effort": "low",
            "context_window_tokens": 50_000,
        },
    )

    catalog = catalog_for(settings)

    assert (catalog.default, catalog.selectable) == ("claude-a", ("claude-a", "claude-b"))
    assert catalog.default_effort == "low"
    assert catalog.context_window("claude-b") == 50_000
