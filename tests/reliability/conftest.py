"""Fixtures the fault-injection suite shares: participants' view of the test's namespace."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.lifecycle_support import Tasks


@pytest.fixture
def tasks(api: Any, namespace: str) -> Tasks:
    return Tasks(api, namespace)
