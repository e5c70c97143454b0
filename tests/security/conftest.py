"""The security suite's tests that run the gateway use the integration suite's fixtures for it
(replicas as the chart's ServiceAccount, A2A clients opened on demand) and for ``kubectl
harness``; a module that needs other settings defines its own of the same name."""

from tests.integration.conftest import gateway, harness, users

__all__ = ["gateway", "harness", "users"]
