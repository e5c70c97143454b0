"""Why the local cluster did not come up: one typed error for the control plane, one for its
node, each with a message that says which part failed and where its log is.

They have a module of their own because every step of a start raises them (the processes, the
CRDs and admission policies applied, the node's parts), and ``tiny-harness up`` catches
:class:`ClusterError` to print it instead of a traceback.
"""

from __future__ import annotations


class ClusterError(RuntimeError):
    """The local control plane could not be started; the message says why and where to look."""


class NodeError(RuntimeError):
    """The node did not come up; the message says which part and where its log is."""
