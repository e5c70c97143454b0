"""kopf settings for the tiny-harness operator.

The operator registers only raw-event handlers (no indexes: :mod:`.priming` says why), which
keep no progress or diff-base records and add no finalizers: kopf writes nothing to our
objects. What is configured here is how kopf watches, and that it builds no diff base (below).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import kopf


class NoDiffBase(kopf.DiffBaseStorage):
    """A diff base that is never built, read or stored.

    kopf computes an object's "essence" (a deep copy of it, less metadata and status) on
    every event, to diff it for change handlers. The operator has none (raw-event handlers
    only), so the copy was thrown away: about a millisecond of CPU per event, at
    several events per turn.
    """

    def build(self, *, body: Any, extra_fields: Iterable[Any] | None = None) -> Any:
        return {}

    def fetch(self, *, body: Any) -> Any:
        return None

    def store(self, *, body: Any, patch: Any, essence: Any) -> None:
        return None


def operator_settings(*, standalone: bool = True) -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.posting.level = logging.INFO
    settings.peering.standalone = standalone
    settings.peering.mandatory = False
    settings.watching.server_timeout = 300
    # kopf's own listing in pages (it would ask for a namespace's every object at once: with
    # large goals, hundreds of MB in one response), and an object's worker that holds its last
    # event's body let go soon after (kopf's default keeps it 5 s; a listing of thousands of
    # objects would hold them all).
    settings.watching.chunk_size = 100
    settings.queueing.idle_timeout = 0.5
    # We name our resources; no need to scan the cluster's CRDs (and no RBAC to do so).
    settings.scanning.disabled = True
    settings.persistence.diffbase_storage = NoDiffBase()
    return settings
