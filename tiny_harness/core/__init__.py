"""The pure domain of tiny-harness: the task model, the plan, the core loop and its ports.

Nothing in here talks to Kubernetes, HTTP or a model provider; hosts (the operator, tests) plug
those in through small protocols, so the same behaviour runs everywhere.
"""
