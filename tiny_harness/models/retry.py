"""One bounded retry loop for every adapter, over either SDK's exceptions.

The SDK clients are built with ``max_retries=0`` and this loop retries instead, for three
reasons: the backoff is a setting (tests run it at zero), the budget is the same for every
provider, and when the budget runs out the caller gets a typed
:class:`~tiny_harness.models.call_errors.ModelCallError` rather than an SDK exception.

Every failure is classified into a condition reason (see
:data:`~tiny_harness.models.call_errors.ModelCallReason`) and, while the loop backs off, the
:data:`~tiny_harness.core.llm.retry_observer` of the running turn hears about each retry, so
a participant is not left looking at a turn that seems to hang.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from tiny_harness.core.backoff import Backoff, retry_after
from tiny_harness.core.llm import RetryNotice, retry_observer
from tiny_harness.core.tracing import add_event
from tiny_harness.models.call_errors import (
    ModelCallError,
    ModelRequestRejectedError,
    ModelUnavailableError,
)

T = TypeVar("T")

log = logging.getLogger(__name__)

#: OpenAI's error code for a conversation longer than the model's window.
_CONTEXT_TOO_LONG_CODES = frozenset({"context_length_exceeded"})
#: How providers word it, for those that send no code: OpenAI's text, which vLLM and proxies
#: copy ("maximum context length"), the Responses API ("context window"), Anthropic, which has
#: no code at all ("prompt is too long", "exceed context limit"), and llama.cpp ("context size").
_CONTEXT_TOO_LONG_PHRASES = (
    "maximum context length",
    "context window",
    "context limit",
    "context size",
    "prompt is too long",
)

#: Provider text is shown to people; a paragraph of it is enough to act on.
_MAX_DETAIL_CHARS = 300
#: Key-shaped tokens (OpenAI ``sk-…``, Anthropic ``sk-ant-…``), scrubbed even when we do not
#: know the key, because a proxy in between may echo one the adapter never saw.
_KEY_SHAPED = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{6,}")
#: Keys shorter than this are placeholders ("unused" for a local server), not secrets, and
#: scrubbing them would garble ordinary words.
_MIN_SECRET_CHARS = 8
_REDACTED = "[redacted]"


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry: at most ``max_retries`` retries after the first
    attempt, with exponential backoff from ``initial_backoff_seconds`` capped at
    ``max_backoff_seconds`` (a server's ``Retry-After`` is honoured within the same cap)."""

    max_retries: int = 3
    initial_backoff_seconds: float = 0.5
    max_backoff_seconds: float = 8.0

    def backoff(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0-based), jittered so that many
        tasks that hit the same rate limit do not retry in lockstep (core/backoff.py)."""
        waits = Backoff(self.initial_backoff_seconds, self.max_backoff_seconds)
        return waits.delay(retry + 1, retry_after=retry_after)


@dataclass(frozen=True)
class SdkErrors:
    """One SDK's exception classes, by what they mean here.

    Each adapter names its own SDK's, so this module imports neither SDK and a process loads
    only the one it is configured for (each is tens of megabytes).
    """

    #: The server answered with an error status (has ``status_code``, ``body``, ``message``,
    #: ``response``).
    status: type[Exception]
    #: No answer at all: the connection failed or timed out.
    no_answer: type[Exception]
    #: The timeout among the no-answer errors.
    timeout: type[Exception]


@dataclass(frozen=True)
class CallContext:
    """What an error message needs to tell the user what to fix."""

    provider: str
    api_key_env: str
    settings_prefix: str


def is_retryable_status(status: int) -> bool:
    """429 and 5xx are transient; 408 is a timeout the server reported rather than we saw."""
    return status in (408, 429) or status >= 500


def is_context_too_long(message: str, code: str | None = None) -> bool:
    """Whether a provider's refusal says the conversation exceeds the model's context window.

    Neither provider gives this a status of its own (it is a 400 like any invalid request),
    yet it needs a different fix, so the error code or the wording has to tell it apart.
    """
    if code is not None and code.lower() in _CONTEXT_TOO_LONG_CODES:
        return True
    text = message.lower()
    return any(phrase in text for phrase in _CONTEXT_TOO_LONG_PHRASES)


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    errors: SdkErrors,
    context: CallContext,
    redact: Iterable[str] = (),
) -> T:
    """Run ``call`` until it succeeds, a non-transient error occurs, or the budget is spent.

    ``redact`` lists secrets (the client's API key) to scrub from any provider text that ends
    up in an error message or a retry notice.
    """
    secrets = tuple(s for s in redact if len(s) >= _MIN_SECRET_CHARS)
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except errors.status as exc:
            failed: Any = exc
            status = int(failed.status_code)
            message, code = _provider_error(failed.body, str(failed.message))
            detail = _scrub(message, secrets)
            if not is_retryable_status(status):
                too_long = is_context_too_long(message, code)
                raise _rejected(context, status, detail, attempt, too_long=too_long) from None
            failure = f"HTTP {status}: {detail}"
            asked = retry_after(failed.response.headers)
        except errors.no_answer as exc:
            status = None
            failure = "timed out" if isinstance(exc, errors.timeout) else "connection failed"
            asked = None
        if attempt > policy.max_retries:
            prefix = context.settings_prefix
            raise ModelUnavailableError(
                context.provider,
                f"gave up after {attempt} attempt(s); last failure: {failure}. The provider is "
                f"rate limiting, failing or slow; try again later, or raise "
                f"{prefix}.max_retries or {prefix}.timeout_seconds",
                status=status,
                attempts=attempt,
                reason="ModelUnavailable",
                setting=f"{prefix}.max_retries",
            ) from None
        delay = policy.backoff(attempt - 1, asked)
        notice = RetryNotice(
            attempt=attempt, budget=policy.max_retries, reason=failure, delay_seconds=delay
        )
        await _backoff(notice)


async def _backoff(notice: RetryNotice) -> None:
    """Tell the turn's observer, if any, then wait out the rest of the delay.

    The observer's own time counts toward the wait, so a slow status write does not lengthen
    the backoff; and its failure is only logged, because a broken progress display must not
    cost the turn its retries.
    """
    loop = asyncio.get_running_loop()
    started = loop.time()
    add_event(
        "retry",
        {
            "tiny_harness.retry.attempt": notice.attempt,
            "tiny_harness.retry.reason": notice.reason,
            "tiny_harness.retry.delay_seconds": notice.delay_seconds,
        },
    )
    observer = retry_observer.get()
    if observer is not None:
        try:
            await observer(notice)
        except Exception:
            log.debug("the retry observer failed; retrying anyway", exc_info=True)
    await asyncio.sleep(max(0.0, notice.delay_seconds - (loop.time() - started)))


def _rejected(
    context: CallContext, status: int, detail: str, attempts: int, *, too_long: bool
) -> ModelCallError:
    """The permanent error for a refusal, by what the user has to change to get past it."""
    prefix = context.settings_prefix
    if status in (401, 403):
        # The provider's message may echo part of the key, so it is left out on purpose.
        return ModelRequestRejectedError(
            context.provider,
            f"the provider refused the API key (HTTP {status}); check {context.api_key_env}",
            status=status,
            attempts=attempts,
            reason="ModelUnauthorized",
            setting=context.api_key_env,
        )
    if status == 404:
        return ModelRequestRejectedError(
            context.provider,
            f"not found (HTTP 404): {detail}; check {prefix}.model and {prefix}.base_url",
            status=status,
            attempts=attempts,
            reason="ModelNotFound",
            setting=f"{prefix}.model",
        )
    if too_long:
        return ModelRequestRejectedError(
            context.provider,
            f"the conversation no longer fits the model's context window (HTTP {status}); "
            f"choose a model with a larger window (/model, or {prefix}.model) or lower the "
            f"context the task carries. The provider said: {detail}",
            status=status,
            attempts=attempts,
            reason="ContextTooLong",
            setting=f"{prefix}.model",
        )
    return ModelRequestRejectedError(
        context.provider,
        f"the provider rejected the request (HTTP {status}): {detail}",
        status=status,
        attempts=attempts,
        reason="ModelRequestInvalid",
    )


def _provider_error(body: object, fallback: str) -> tuple[str, str | None]:
    """The provider's own message and error code, from either SDK's error body.

    The OpenAI SDK keeps the inner ``error`` object as the body, Anthropic's the whole
    ``{"type": "error", "error": {...}}``; both shapes are read the same way.
    """
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            code = error.get("code")
            return str(error["message"]), code if isinstance(code, str) else None
    return fallback, None


def _scrub(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        text = text.replace(secret, _REDACTED)
    text = _KEY_SHAPED.sub(_REDACTED, text)
    if len(text) > _MAX_DETAIL_CHARS:
        text = text[: _MAX_DETAIL_CHARS - 1] + "…"
    return text
