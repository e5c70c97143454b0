"""What every adapter shares: a provider client, a default model, bounded retries, closing.

Each provider module only says how to build its request and how to read its answer
(``_create`` and ``_parse``); the retry loop, the default model and the client's lifetime
live here once.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

from tiny_harness.core.llm import LLMRequest, LLMResponse
from tiny_harness.models.retry import CallContext, RetryPolicy, call_with_retries

Raw = TypeVar("Raw")
Client = TypeVar("Client")


class RetryingAdapter(Generic[Client, Raw]):
    """A :class:`~tiny_harness.core.llm.ModelAdapter` that retries transient failures."""

    #: The context errors are reported in (API name, key variable, settings section).
    default_context: ClassVar[CallContext]

    def __init__(
        self,
        client: Client,
        *,
        default_model: str,
        retry_policy: RetryPolicy | None = None,
        context: CallContext | None = None,
    ) -> None:
        self._client = client
        self._default_model = default_model
        self._retry_policy = retry_policy or RetryPolicy()
        self._context = context or self.default_context

    @property
    def default_model(self) -> str:
        return self._default_model

    async def complete(self, request: LLMRequest) -> LLMResponse:
        raw = await call_with_retries(
            lambda: self._create(request),
            policy=self._retry_policy,
            context=self._context,
            redact=self._credentials(),
        )
        return self._parse(raw)

    def _credentials(self) -> tuple[str, ...]:
        """The client's key (or token), so the retry loop can scrub a provider's echo of it.

        Read from the SDK client at each call rather than copied onto the adapter: the client
        is the one place the key is kept.
        """
        found = (getattr(self._client, name, None) for name in ("api_key", "auth_token"))
        return tuple(value for value in found if isinstance(value, str) and value)

    async def aclose(self) -> None:
        client: Any = self._client
        await client.close()

    async def _create(self, request: LLMRequest) -> Raw:
        raise NotImplementedError

    def _parse(self, raw: Raw) -> LLMResponse:
        raise NotImplementedError
