"""What every adapter shares: a provider client, a default model, bounded retries, closing.

Each provider module only says where its API lives, how to build the request body, how to
read the answer, and which of its SDK's exceptions mean what (``path``, ``_body``, ``_parse``,
``errors``); the call, the retry loop, the default model and the client's lifetime live here
once.

The body is built as plain JSON and posted with the SDK client's own ``post``, rather than
through the typed ``create`` methods. Those walk every parameter through a type-driven
transform that, for JSON we have already built, changes nothing and costs more CPU than the
rest of the call together (it grows with the conversation). ``post`` is the SDKs' documented
way to send a body as it is; the client's key, base URL, headers, timeout and the typed
response (``raw_type``) are the same as ``create`` would use.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, Generic, Protocol, TypeVar

from tiny_harness.core.llm import LLMRequest, LLMResponse
from tiny_harness.models.retry import CallContext, RetryPolicy, SdkErrors, call_with_retries

Raw = TypeVar("Raw")
Client = TypeVar("Client", bound="PostingClient")
Body = dict[str, object]

#: What a message with nothing to say is sent as, when it has no tool call to carry either.
EMPTY_MESSAGE: Final = "(empty message)"


def blank(text: str) -> bool:
    """``text`` says nothing: it is empty or only whitespace.

    Anthropic refuses a text block like that ("text content blocks must be non-empty", "...
    must contain non-whitespace text"), and a message with no content at all; the history is
    sent again on every call, so one such message would fail every later call of the
    conversation. Every adapter therefore treats blank text the same way: beside a tool call
    it is left out, and a message with nothing else is sent as :data:`EMPTY_MESSAGE`, which
    keeps the turn in its place (roles still alternate, the model sees something was said).
    The OpenAI APIs accept blank text, but the same history reads the same on every provider.
    """
    return not text.strip()


class PostingClient(Protocol):
    """The part of both SDKs' async clients the adapters use."""

    async def post(self, path: str, *, cast_to: Any, body: Any = None) -> Any: ...

    async def close(self) -> None: ...


class RetryingAdapter(Generic[Client, Raw]):
    """A :class:`~tiny_harness.core.llm.ModelAdapter` that retries transient failures."""

    #: The context errors are reported in (API name, key variable, settings section).
    default_context: ClassVar[CallContext]
    #: The endpoint, relative to the client's base URL.
    path: ClassVar[str]
    #: The SDK's model of a successful answer.
    raw_type: ClassVar[type[Any]]
    #: The SDK's exceptions, by what they mean for a retry.
    errors: ClassVar[SdkErrors]

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
        body = self._body(request)
        raw = await call_with_retries(
            lambda: self._post(body),
            policy=self._retry_policy,
            errors=self.errors,
            context=self._context,
            redact=self._credentials(),
        )
        return self._parse(raw)

    async def _post(self, body: Body) -> Raw:
        raw: Raw = await self._client.post(self.path, cast_to=self.raw_type, body=body)
        return raw

    def _credentials(self) -> tuple[str, ...]:
        """The client's key (or token), so the retry loop can scrub a provider's echo of it.

        Read from the SDK client at each call rather than copied onto the adapter: the client
        is the one place the key is kept.
        """
        found = (getattr(self._client, name, None) for name in ("api_key", "auth_token"))
        return tuple(value for value in found if isinstance(value, str) and value)

    async def aclose(self) -> None:
        await self._client.close()

    def _body(self, request: LLMRequest) -> Body:
        raise NotImplementedError

    def _parse(self, raw: Raw) -> LLMResponse:
        raise NotImplementedError
