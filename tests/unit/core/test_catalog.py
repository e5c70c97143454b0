"""The model catalog: the allowlist /model checks, the task's settings, the context windows."""

from __future__ import annotations

import pytest

from tiny_harness.core.catalog import FALLBACK_CONTEXT_WINDOW, ModelCatalog
from tiny_harness.core.errors import ConfigError

CATALOG = ModelCatalog(
    default="gpt-5-mini", selectable=("gpt-5-mini", "gpt-4o"), default_effort="medium"
)


def test_only_listed_models_are_selectable_by_exact_name() -> None:
    assert CATALOG.is_selectable("gpt-4o")
    assert not CATALOG.is_selectable("gpt-4o ")
    assert not CATALOG.is_selectable("GPT-4O")
    assert not CATALOG.is_selectable("evil-model")


def test_a_task_that_sets_nothing_gets_the_defaults() -> None:
    assert CATALOG.settings_for(None, None) == ("gpt-5-mini", "medium")


def test_a_tasks_own_settings_win_over_the_defaults() -> None:
    assert CATALOG.settings_for("gpt-4o", "high") == ("gpt-4o", "high")
    assert CATALOG.settings_for("gpt-4o", None) == ("gpt-4o", "medium")


def test_without_a_default_effort_an_unset_effort_stays_unset() -> None:
    catalog = ModelCatalog(default="m", selectable=("m",))

    assert catalog.settings_for(None, None) == ("m", None)


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4o", 128_000),
        ("gpt-4o-mini-2024-07-18", 128_000),
        ("gpt-4.1-nano", 1_047_576),
        ("gpt-5-mini", 400_000),
        ("claude-sonnet-4-5", 200_000),
        ("qwen2.5-coder:7b", FALLBACK_CONTEXT_WINDOW),
    ],
)
def test_context_windows_come_from_the_family_table(model: str, window: int) -> None:
    assert CATALOG.context_window(model) == window


def test_the_longest_matching_prefix_decides_the_window() -> None:
    catalog = ModelCatalog(
        default="m", selectable=("m",), windows={"llama": 8_192, "llama-3.1": 131_072}
    )

    assert catalog.context_window("llama-3.1-8b") == 131_072
    assert catalog.context_window("llama-2-7b") == 8_192


def test_the_configured_override_wins_for_every_model() -> None:
    catalog = ModelCatalog(
        default="gpt-4o", selectable=("gpt-4o", "local"), context_window_override=16_000
    )

    assert catalog.context_window("gpt-4o") == 16_000
    assert catalog.context_window("local") == 16_000


@pytest.mark.parametrize(
    ("default", "selectable", "override"),
    [("m", (), None), ("m", ("other",), None), ("m", ("m",), 0)],
    ids=["no-models", "default-not-listed", "zero-window"],
)
def test_an_inconsistent_catalog_is_refused(
    default: str, selectable: tuple[str, ...], override: int | None
) -> None:
    with pytest.raises(ConfigError):
        ModelCatalog(default=default, selectable=selectable, context_window_override=override)
