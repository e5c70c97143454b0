"""The kopf operator that runs every ``HarnessTask``.

It lives at ``tiny_harness/operator/`` rather than a top-level ``operator`` package, which would
shadow Python's standard ``operator`` module.
"""
