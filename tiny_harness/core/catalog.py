"""The model catalog: which models a task may use, its defaults, and each model's context window.

``/model`` and ``/effort`` check against it, every request builder asks it for the task's
``(model, effort)``, and context assembly asks it how large the window is. It is built once at
start-up from the provider settings (see ``tiny_harness.models.catalog_for``) and is pure data:
no SDK, no I/O, so the core loop and the commands can use it anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from tiny_harness.core.errors import ConfigError
from tiny_harness.core.task import Effort

#: Context windows by model-name prefix; the longest matching prefix wins, so a dated snapshot
#: (``gpt-4o-2024-08-06``) takes its family's window. Deliberately conservative: a model whose
#: window is larger than listed only compacts a little early, while one that is smaller would
#: fail outright. Operators with other models set ``context_window_tokens``.
KNOWN_CONTEXT_WINDOWS: Final[Mapping[str, int]] = MappingProxyType(
    {
        "claude-": 200_000,
        "gpt-5": 400_000,
        "gpt-4.1": 1_047_576,
        "gpt-4o": 128_000,
        "o3": 200_000,
        "o4-mini": 200_000,
    }
)

#: The window assumed for a model the table does not know (a local vLLM or Ollama model, say).
#: Small on purpose: compacting too early costs a little, overflowing the window fails the turn.
FALLBACK_CONTEXT_WINDOW: Final = 32_768


@dataclass(frozen=True)
class ModelCatalog:
    """The models on offer for one provider and the defaults a task falls back to.

    ``selectable`` is the allowlist ``/model`` checks with an exact string compare, so a
    participant cannot pick an unlisted (and perhaps expensive) model.
    """

    default: str
    selectable: tuple[str, ...]
    default_effort: Effort | None = None
    context_window_override: int | None = None
    windows: Mapping[str, int] = field(default_factory=lambda: KNOWN_CONTEXT_WINDOWS, repr=False)
    fallback_window: int = FALLBACK_CONTEXT_WINDOW

    def __post_init__(self) -> None:
        if not self.selectable:
            raise ConfigError("models", "the selectable model list is empty; list at least one")
        if self.default not in self.selectable:
            raise ConfigError(
                "models",
                f"the default model {self.default!r} is not in the selectable list "
                f"{list(self.selectable)}; add it",
            )
        if self.context_window_override is not None and self.context_window_override <= 0:
            raise ConfigError("context_window_tokens", "must be a positive number of tokens")

    def is_selectable(self, name: str) -> bool:
        """Whether ``/model <name>`` may pick this model (exact match, no normalisation)."""
        return name in self.selectable

    def context_window(self, model: str) -> int:
        """The context window, in tokens, to budget for ``model``.

        The configured override wins for every model: an operator who sets it knows their
        deployment (a vLLM server started with a shorter ``--max-model-len``, say).
        """
        if self.context_window_override is not None:
            return self.context_window_override
        best: str | None = None
        for prefix in self.windows:
            if model.startswith(prefix) and (best is None or len(prefix) > len(best)):
                best = prefix
        return self.windows[best] if best is not None else self.fallback_window

    def settings_for(self, model: str | None, effort: Effort | None) -> tuple[str, Effort | None]:
        """The ``(model, effort)`` a task's model call uses: the task's own, else the defaults.

        An effort of ``None`` after the fallback means "the provider's default", and adapters
        then send no effort parameter at all.
        """
        return (
            model if model is not None else self.default,
            effort if effort is not None else self.default_effort,
        )
