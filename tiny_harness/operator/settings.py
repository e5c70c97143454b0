"""kopf settings for the tiny-harness operator.

Our own prefixes keep kopf's bookkeeping (finalizers, progress and diff-base annotations) under
the project's API group, so it never collides with another kopf operator on the same objects.
"""

from __future__ import annotations

import logging

import kopf

from tiny_harness.kube.names import FINALIZER, PREFIX


def operator_settings(*, standalone: bool = True) -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=PREFIX, key="last-handled-configuration"
    )
    settings.posting.level = logging.INFO
    settings.peering.standalone = standalone
    settings.peering.mandatory = False
    # Tasks are small; this bounds how long a burst of watch events waits to be batched.
    settings.batching.batch_window = 0.01
    settings.watching.server_timeout = 300
    # We name our resources; no need to scan the cluster's CRDs (and no RBAC to do so).
    settings.scanning.disabled = True
    return settings
