"""The one place that talks to the Kubernetes API about tiny-harness's own objects.

The operator, the gateway and the CLI read, write and watch ``HarnessTask`` resources only
through this package, so optimistic concurrency, retries and field names live in one place.
"""
