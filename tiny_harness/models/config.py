"""Provider settings: one typed object per provider, validated once at start-up.

The ``[openai]`` or ``[anthropic]`` section of the configuration becomes an
:class:`OpenAISettings` or :class:`AnthropicSettings` through :func:`parse_provider_settings`,
and every mistake in it is a :class:`~tiny_harness.core.errors.ConfigError` whose key names the
setting (``openai.models``, ``anthropic.timeout_seconds``), never a pydantic trace.

API keys are deliberately not settings: they come from the environment (or are passed to
:func:`~tiny_harness.models.build_adapter`), so a settings object can be logged or shown by
``/status`` without leaking one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from tiny_harness.core.catalog import ModelCatalog
from tiny_harness.core.errors import ConfigError
from tiny_harness.core.task import Effort
from tiny_harness.models.retry import RetryPolicy


class _ProviderSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    #: The configuration section these settings come from, for error keys.
    provider_key: ClassVar[str]
    default_api_key_env: ClassVar[str]

    model: str = Field(min_length=1, description="The default model for tasks that set none.")
    models: tuple[str, ...] | None = Field(
        default=None,
        description="The models /model may select; unset means only `model`.",
    )
    reasoning_effort: Effort | None = Field(
        default=None, description="The default effort; unset means the provider's default."
    )
    base_url: str | None = Field(
        default=None,
        description="Another endpoint speaking this provider's API (vLLM, Ollama, a proxy).",
    )
    api_key_env: str | None = Field(
        default=None,
        min_length=1,
        description="The environment variable holding the API key, if not the usual one.",
    )
    context_window_tokens: int | None = Field(
        default=None, gt=0, description="Overrides the context window of every model."
    )
    timeout_seconds: float = Field(default=120.0, gt=0, description="Per attempt.")
    max_retries: int = Field(default=3, ge=0, le=20, description="Retries after the first try.")
    retry_backoff_seconds: float = Field(
        default=0.5, ge=0, description="The first retry's wait; it doubles each retry."
    )
    retry_max_backoff_seconds: float = Field(default=8.0, ge=0, description="The longest wait.")

    @property
    def selectable_models(self) -> tuple[str, ...]:
        return self.models if self.models is not None else (self.model,)

    @property
    def key_env(self) -> str:
        return self.api_key_env or self.default_api_key_env

    @property
    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(
            max_retries=self.max_retries,
            initial_backoff_seconds=self.retry_backoff_seconds,
            max_backoff_seconds=self.retry_max_backoff_seconds,
        )

    @model_validator(mode="after")
    def _models_contain_the_default(self) -> _ProviderSettings:
        # Raised as ConfigError, not ValueError, so pydantic lets it through with its exact key.
        key = f"{self.provider_key}.models"
        if self.models is not None and not self.models:
            raise ConfigError(key, "is empty; list the selectable models, or remove the key")
        if self.models is not None and self.model not in self.models:
            raise ConfigError(
                key,
                f"does not contain the default model {self.model!r}; add it to the list",
            )
        return self


class OpenAISettings(_ProviderSettings):
    """The ``[openai]`` section: OpenAI itself, or any server speaking its API."""

    provider_key: ClassVar[str] = "openai"
    default_api_key_env: ClassVar[str] = "OPENAI_API_KEY"

    provider: Literal["openai"] = "openai"
    api: Literal["responses", "chat"] = Field(
        default="responses",
        description="`chat` for servers that only speak Chat Completions (most local ones).",
    )


class AnthropicSettings(_ProviderSettings):
    """The ``[anthropic]`` section."""

    provider_key: ClassVar[str] = "anthropic"
    default_api_key_env: ClassVar[str] = "ANTHROPIC_API_KEY"

    provider: Literal["anthropic"] = "anthropic"
    max_output_tokens: int = Field(
        default=8192,
        gt=0,
        description="Sent as max_tokens when a request sets no limit; the API requires one.",
    )


ProviderSettings = Annotated[OpenAISettings | AnthropicSettings, Field(discriminator="provider")]

_SETTINGS_BY_PROVIDER: dict[str, type[OpenAISettings] | type[AnthropicSettings]] = {
    "openai": OpenAISettings,
    "anthropic": AnthropicSettings,
}
_ADAPTER: TypeAdapter[OpenAISettings | AnthropicSettings] = TypeAdapter(ProviderSettings)


def parse_provider_settings(
    provider: str, section: Mapping[str, Any]
) -> OpenAISettings | AnthropicSettings:
    """Validate one provider's configuration section.

    Raises :class:`ConfigError` keyed ``<provider>.<setting>`` for the first problem found.
    """
    settings_type = _SETTINGS_BY_PROVIDER.get(provider)
    if settings_type is None:
        known = ", ".join(sorted(_SETTINGS_BY_PROVIDER))
        raise ConfigError("provider", f"unknown provider {provider!r}; use one of: {known}")
    try:
        return _ADAPTER.validate_python({**section, "provider": provider})
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        loc = ".".join(str(part) for part in first["loc"] if part != provider)
        raise ConfigError(f"{provider}.{loc}" if loc else provider, first["msg"]) from None


def catalog_for(settings: OpenAISettings | AnthropicSettings) -> ModelCatalog:
    """The catalog ``/model``, ``/effort`` and context assembly consult for this provider."""
    return ModelCatalog(
        default=settings.model,
        selectable=settings.selectable_models,
        default_effort=settings.reasoning_effort,
        context_window_override=settings.context_window_tokens,
    )
