"""Typed errors for a model call that failed, so callers never handle SDK exceptions.

The core loop sees one of two outcomes: the provider could not be reached in time
(:class:`ModelUnavailableError`, worth trying the turn again later) or it refused the request
(:class:`ModelRequestRejectedError`, which needs a change of settings or credentials).
Messages never carry an API key, nor the provider's echo of one.
"""

from __future__ import annotations

from tiny_harness.core.errors import HarnessError


class ModelCallError(HarnessError):
    """A model call failed. ``status`` is the HTTP status, or None when no answer came."""

    def __init__(self, provider: str, message: str, *, status: int | None, attempts: int) -> None:
        super().__init__(f"{provider}: {message}")
        self.provider = provider
        self.status = status
        self.attempts = attempts


class ModelUnavailableError(ModelCallError):
    """Rate limits, server errors or timeouts outlasted the retry budget."""


class ModelRequestRejectedError(ModelCallError):
    """The provider refused the request itself (bad key, unknown model, invalid request)."""
