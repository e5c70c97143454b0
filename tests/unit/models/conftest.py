"""Fixtures for the adapter tests: a scripted server per test and adapters pointed at it.

The adapters are built the way the operator builds them (settings, then ``build_adapter``),
with the real SDK clients, so the tests cover the wire format and not a mock of it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from adapter_kit import TEST_KEY, Kind, MakeAdapter, provider_of, settings_section

from tiny_harness.models import Adapter, build_adapter, parse_provider_settings
from tiny_harness.testing.model_server import ScriptedModelServer


@pytest.fixture
async def server() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as server:
        yield server


@pytest.fixture
async def make_adapter(server: ScriptedModelServer) -> AsyncIterator[MakeAdapter]:
    """Build an adapter of a kind against the test's server; closed at teardown."""
    built: list[Adapter] = []

    async def make(kind: Kind, **overrides: Any) -> Adapter:
        section = settings_section(kind, server, **overrides)
        adapter = build_adapter(
            parse_provider_settings(provider_of(kind), section), api_key=TEST_KEY
        )
        built.append(adapter)
        return adapter

    yield make
    for adapter in built:
        await adapter.aclose()
