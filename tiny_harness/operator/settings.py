"""kopf settings for the tiny-harness operator.

The operator registers only indexes and raw-event handlers, which keep no progress or diff-base
records and add no finalizers: kopf writes nothing to our objects. So no storage is configured
here; what is, is how kopf watches.
"""

from __future__ import annotations

import logging

import kopf


def operator_settings(*, standalone: bool = True) -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.posting.level = logging.INFO
    settings.peering.standalone = standalone
    settings.peering.mandatory = False
    # Every event only pokes a worker, which reads the newest state from the cache: there is
    # nothing to gain from holding events back to batch them, and each wait is added latency.
    settings.batching.batch_window = 0.0
    settings.watching.server_timeout = 300
    # We name our resources; no need to scan the cluster's CRDs (and no RBAC to do so).
    settings.scanning.disabled = True
    return settings
