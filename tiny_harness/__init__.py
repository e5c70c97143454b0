"""tiny-harness: an agent harness in which every unit of work is an A2A task and every task is a
Kubernetes custom resource (``HarnessTask``)."""

__version__ = "0.1.0"
