"""Command-line entry points: ``tiny-harness`` (and, later, ``kubectl-harness``)."""
