"""What the terminal UI told its user, read without Textual's clock.

Textual drops a notice from ``App._notifications`` once ``NOTIFICATION_TIMEOUT`` seconds of wall
time have passed, and adds it only when the app handles the ``Notify`` message ``notify`` posted:
a test that looks right after a pause can look too early, and on a loaded machine it can look too
late. A test asks with :func:`noticed` inside ``until`` and keeps the notices for its whole length
with the ``lasting_notices`` fixture.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tiny_harness.tui.app import HarnessApp

NOTICE_KEPT_SECONDS = 3600.0


@pytest.fixture
def lasting_notices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Notices stay listed for the test's length: none expires while a test waits to see it."""
    monkeypatch.setattr(HarnessApp, "NOTIFICATION_TIMEOUT", NOTICE_KEPT_SECONDS)


def noticed(app: HarnessApp, text: str | Callable[[str], bool]) -> bool:
    """Whether the app shows a notice equal to ``text`` (or one ``text`` accepts)."""
    wanted = text if callable(text) else text.__eq__
    return any(wanted(str(notice.message)) for notice in app._notifications)


def noticed_part(part: str) -> Callable[[str], bool]:
    """A test for :func:`noticed`: the notice contains ``part``."""
    return lambda message: part in message
