"""Command-line entry points: ``tiny-harness`` (cluster, operator, gateway) and
``kubectl-harness`` (the ``kubectl harness`` plugin for participants)."""
