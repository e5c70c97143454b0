"""When tracing is on, and where spans go (tiny_harness/telemetry.py)."""

from __future__ import annotations

import logging

import pytest

from tiny_harness.core.errors import ConfigError
from tiny_harness.core.settings import Settings, TracingSettings
from tiny_harness.telemetry import build_provider, traces_endpoint

OFF = TracingSettings()


def test_tracing_is_off_unless_an_endpoint_is_configured() -> None:
    assert traces_endpoint(OFF, {}) is None
    assert build_provider(OFF, "tiny-harness-operator", {}) is None


def test_the_settings_file_wins_over_the_environment() -> None:
    settings = TracingSettings(otlp_endpoint="http://collector:4318/")
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4318"}
    assert traces_endpoint(settings, environ) == "http://collector:4318/v1/traces"


def test_the_standard_variables_turn_it_on_as_the_otlp_specification_says() -> None:
    generic = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    assert traces_endpoint(OFF, generic) == "http://collector:4318/v1/traces"
    # The signal's own variable is a full URL, used as it is.
    signal = {**generic, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom"}
    assert traces_endpoint(OFF, signal) == "http://c:4318/custom"


def test_otel_sdk_disabled_turns_it_off_whatever_else_says_on() -> None:
    settings = TracingSettings(otlp_endpoint="http://collector:4318")
    assert traces_endpoint(settings, {"OTEL_SDK_DISABLED": "true"}) is None


def test_the_provider_names_the_service_and_logs_no_credentials(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = TracingSettings(otlp_endpoint="http://user:pw@collector:4318", sample_ratio=0.25)
    with caplog.at_level(logging.INFO, logger="tiny_harness.telemetry"):
        provider = build_provider(settings, "tiny-harness-gateway", {})
    assert provider is not None
    try:
        assert provider.resource.attributes["service.name"] == "tiny-harness-gateway"
        assert "0.25" in provider.sampler.get_description()
    finally:
        provider.shutdown()
    assert "collector:4318/v1/traces" in caplog.text
    assert "pw" not in caplog.text


def test_otel_service_name_overrides_the_default_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "harness-ops")
    settings = TracingSettings(otlp_endpoint="http://collector:4318")
    provider = build_provider(settings, "tiny-harness-operator")
    assert provider is not None
    provider.shutdown()
    assert provider.resource.attributes["service.name"] == "harness-ops"


@pytest.mark.parametrize(
    ("tracing", "key"),
    [
        ({"otlp_endpoint": "collector:4318"}, "tracing.otlp_endpoint"),
        ({"sample_ratio": 1.5}, "tracing.sample_ratio"),
        ({"endpoint": "http://c:4318"}, "tracing.endpoint"),
    ],
)
def test_a_bad_tracing_setting_names_its_key(tracing: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        Settings.parse({"tracing": tracing})
