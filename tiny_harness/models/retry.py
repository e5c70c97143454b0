"""One bounded retry loop for every adapter, over both SDKs' exceptions.

The SDK clients are built with ``max_retries=0`` and this loop retries instead, for three
reasons: the backoff is a setting (tests run it at zero), the budget is the same for every
provider, and when the budget runs out the caller gets a typed
:class:`~tiny_harness.models.errors.ModelCallError` rather than an SDK exception.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import anthropic
import openai

from tiny_harness.models.errors import (
    ModelCallError,
    ModelRequestRejectedError,
    ModelUnavailableError,
)

T = TypeVar("T")

_STATUS_ERRORS = (openai.APIStatusError, anthropic.APIStatusError)
_NO_ANSWER_ERRORS = (openai.APIConnectionError, anthropic.APIConnectionError)
_TIMEOUT_ERRORS = (openai.APITimeoutError, anthropic.APITimeoutError)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry: at most ``max_retries`` retries after the first
    attempt, with exponential backoff from ``initial_backoff_seconds`` capped at
    ``max_backoff_seconds`` (a server's ``Retry-After`` is honoured within the same cap)."""

    max_retries: int = 3
    initial_backoff_seconds: float = 0.5
    max_backoff_seconds: float = 8.0

    def backoff(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_backoff_seconds)
        base = min(self.initial_backoff_seconds * 2.0**retry, self.max_backoff_seconds)
        # Jitter keeps many tasks that hit the same rate limit from retrying in lockstep.
        return base * (0.5 + random.random() / 2)


@dataclass(frozen=True)
class CallContext:
    """What an error message needs to tell the user what to fix."""

    provider: str
    api_key_env: str
    settings_prefix: str


def is_retryable_status(status: int) -> bool:
    """429 and 5xx are transient; 408 is a timeout the server reported rather than we saw."""
    return status in (408, 429) or status >= 500


async def call_with_retries(
    call: Callable[[], Awaitable[T]], *, policy: RetryPolicy, context: CallContext
) -> T:
    """Run ``call`` until it succeeds, a non-transient error occurs, or the budget is spent."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except _STATUS_ERRORS as exc:
            status = exc.status_code
            if not is_retryable_status(status):
                raise _rejected(context, status, _provider_message(exc), attempt) from None
            failure = f"HTTP {status}: {_provider_message(exc)}"
            retry_after = _retry_after(exc.response.headers)
        except _NO_ANSWER_ERRORS as exc:
            status = None
            failure = "timed out" if isinstance(exc, _TIMEOUT_ERRORS) else "connection failed"
            retry_after = None
        if attempt > policy.max_retries:
            raise ModelUnavailableError(
                context.provider,
                f"gave up after {attempt} attempt(s); last failure: {failure}. The provider is "
                f"rate limiting, failing or slow; try again later, or raise "
                f"{context.settings_prefix}.max_retries / timeout_seconds",
                status=status,
                attempts=attempt,
            ) from None
        await asyncio.sleep(policy.backoff(attempt - 1, retry_after))


def _rejected(context: CallContext, status: int, detail: str, attempts: int) -> ModelCallError:
    if status in (401, 403):
        # The provider's message may echo part of the key, so it is left out on purpose.
        message = f"the provider refused the API key (HTTP {status}); check {context.api_key_env}"
    elif status == 404:
        message = (
            f"not found (HTTP 404): {detail}; check {context.settings_prefix}.model and "
            f"{context.settings_prefix}.base_url"
        )
    else:
        message = f"the provider rejected the request (HTTP {status}): {detail}"
    return ModelRequestRejectedError(context.provider, message, status=status, attempts=attempts)


def _provider_message(exc: openai.APIStatusError | anthropic.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
    return exc.message


def _retry_after(headers: Mapping[str, str]) -> float | None:
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) / scale
        except ValueError:
            # An HTTP-date Retry-After: fall back to our own backoff rather than parse clocks.
            return None
    return None
