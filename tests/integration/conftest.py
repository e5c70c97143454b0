"""Fixtures the integration tests share: gateway replicas with the chart's RBAC, and A2A
clients opened on demand."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.integration.gateway_support import Replicas, Users
from tests.integration.kubectl_support import Harness


@pytest.fixture
def gateway(kubeconfig: Path, namespace: str, tmp_path: Path) -> Iterator[Replicas]:
    """Gateway replicas as the chart's ServiceAccount; keyword arguments are [gateway] settings."""
    replicas = Replicas(kubeconfig, namespace, tmp_path)
    yield replicas
    replicas.stop()


@pytest.fixture
async def users() -> AsyncIterator[Users]:
    opened = Users()
    yield opened
    await opened.close()


@pytest.fixture
def harness(kubeconfig: Path, namespace: str) -> Harness:
    """``kubectl harness`` in the test's namespace."""
    return Harness(kubeconfig, namespace)
