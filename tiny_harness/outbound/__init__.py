"""Outbound HTTP for tool servers, remote agents and agents' cards: the one place that makes
the operator's clients for them, each connection checked against the destination policy
(:mod:`tiny_harness.core.destinations`) as it is opened, and each Secret header attached only
to a request whose origin the Secret names (:mod:`tiny_harness.core.secret_destinations`).

Two HTTP stacks are in use: the ``a2a`` SDK speaks over ``httpx``, the ``mcp`` SDK over
``httpx2``. Both sit on the same connection layer's interface (``httpcore`` and ``httpcore2``),
so the guard is written once (:class:`~tiny_harness.outbound.guard.Guard`, in one network
backend, :class:`~tiny_harness.outbound.guard.GuardedBackend`) and put under each; the one
reach into the stacks' internals that this takes is
:func:`~tiny_harness.outbound.httpx_internals.put_network_backend`.
Below ``toolservers`` and the operator, above ``core``; it knows no Kubernetes.
"""
