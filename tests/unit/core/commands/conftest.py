"""Fixtures for the command tests; the helpers themselves live in ``support.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.core.commands.support import PluginFactory


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PluginFactory:
    return PluginFactory(tmp_path, monkeypatch)
