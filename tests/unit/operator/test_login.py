"""The operator's login in a pod: the API server where the kubelet's service variables say,
never a DNS name, and the mounted ServiceAccount's token, CA and namespace."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiny_harness.operator.login import in_cluster_server, service_account

POD = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def _mounted(tmp_path: Path, *, token: str = "tok-abc\n", namespace: str = "team") -> Path:
    (tmp_path / "token").write_text(token)
    (tmp_path / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "namespace").write_text(namespace)
    return tmp_path


def test_the_server_is_the_service_address_not_a_dns_name(tmp_path: Path) -> None:
    info = service_account(directory=_mounted(tmp_path), environ=POD)
    assert info is not None
    assert info.server == "https://10.96.0.1:443"
    assert info.token == "tok-abc"
    assert info.ca_path == str(tmp_path / "ca.crt")
    assert info.default_namespace == "team"


def test_an_ipv6_service_address_is_bracketed() -> None:
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"}
    assert in_cluster_server(env) == "https://[fd00::1]:6443"


@pytest.mark.parametrize(
    "environ", [{}, {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT": "443"}]
)
def test_without_the_service_variables_it_is_not_a_pod(
    tmp_path: Path, environ: dict[str, str]
) -> None:
    assert service_account(directory=_mounted(tmp_path), environ=environ) is None


def test_without_a_mounted_token_it_is_not_a_pod(tmp_path: Path) -> None:
    assert service_account(directory=tmp_path, environ=POD) is None


def test_a_rotated_token_is_read_at_the_next_login(tmp_path: Path) -> None:
    directory = _mounted(tmp_path)
    first = service_account(directory=directory, environ=POD)
    (directory / "token").write_text("tok-rotated")
    second = service_account(directory=directory, environ=POD)
    assert first is not None
    assert second is not None
    assert (first.token, second.token) == ("tok-abc", "tok-rotated")
