"""The security suite's tests that run the gateway use the integration suite's fixtures for it
(replicas as the chart's ServiceAccount, A2A clients opened on demand); a module that needs
other settings defines its own of the same name."""

from tests.integration.conftest import gateway, users

__all__ = ["gateway", "users"]
