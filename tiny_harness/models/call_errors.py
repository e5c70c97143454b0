"""Typed errors for a model call that failed, so callers never handle SDK exceptions.

The core loop sees one of two outcomes: the provider could not be reached in time
(:class:`ModelUnavailableError`, worth trying the turn again later) or it refused the request
(:class:`ModelRequestRejectedError`, which needs a change of settings or credentials).

Each error also carries a ``reason``, a CamelCase code in the style of a Kubernetes condition
reason, so a host can put it on the task's status without parsing the message, and a
``setting`` naming the setting or environment variable to fix. Messages never carry an API key,
nor the provider's echo of one.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

from tiny_harness.core.errors import HarnessError

#: Why a model call failed, as a condition reason.
ModelCallReason = Literal[
    "ModelUnauthorized",
    "ModelNotFound",
    "ContextTooLong",
    "ModelRequestInvalid",
    "ModelUnavailable",
]

#: Every :data:`ModelCallReason`, for hosts that validate or document them.
MODEL_CALL_REASONS: Final[frozenset[str]] = frozenset(get_args(ModelCallReason))


class ModelCallError(HarnessError):
    """A model call failed. ``status`` is the HTTP status, or None when no answer came.

    ``reason`` is one of :data:`ModelCallReason`; ``setting`` names what to fix (for example
    ``openai.model`` or ``ANTHROPIC_API_KEY``), or is None when no one setting is to blame.
    """

    def __init__(
        self,
        provider: str,
        message: str,
        *,
        status: int | None,
        attempts: int,
        reason: ModelCallReason,
        setting: str | None = None,
    ) -> None:
        super().__init__(f"{provider}: {message}")
        self.provider = provider
        self.status = status
        self.attempts = attempts
        self.reason: str = reason
        self.setting = setting

    @property
    def permanent(self) -> bool:
        """True when repeating the same call cannot succeed until something is changed."""
        return False


class ModelUnavailableError(ModelCallError):
    """Rate limits, server errors or timeouts outlasted the retry budget."""


class ModelRequestRejectedError(ModelCallError):
    """The provider refused the request itself (bad key, unknown model, invalid request)."""

    @property
    def permanent(self) -> bool:
        return True
