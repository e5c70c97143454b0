"""The kubeconfigs the local cluster writes: the admin's, which every client of the cluster
is handed (tests, ``tiny-harness up``, ``kubectl``, the node's kube-proxy, scheduler and
CoreDNS), and the one a node's kubelet logs in with as itself.

Both hold or name a client key, so both are written 0600 from the first byte.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml

from tiny_harness.devcluster.certs import Pki

#: The admin kubeconfig's cluster and context (``kubectl --context tiny-harness``).
CONTEXT = "tiny-harness"


def write_admin_kubeconfig(path: Path, server: str, pki: Pki) -> None:
    """The admin's kubeconfig, self-contained: the CA and the admin's certificate and key
    inline, so it works wherever it is copied; the ``default`` namespace."""

    def b64(file: Path) -> str:
        return base64.b64encode(file.read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CONTEXT,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": b64(pki.ca_cert),
                },
            }
        ],
        "users": [
            {
                "name": "tiny-harness-admin",
                "user": {
                    "client-certificate-data": b64(pki.admin_cert),
                    "client-key-data": b64(pki.admin_key),
                },
            }
        ],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {
                    "cluster": CONTEXT,
                    "user": "tiny-harness-admin",
                    "namespace": "default",
                },
            }
        ],
        "current-context": CONTEXT,
    }
    _write_private(path, config)


def write_client_kubeconfig(
    path: Path, server: str, ca: Path, cert: Path, key: Path, user: str
) -> None:
    """A kubeconfig for ``user`` that names its CA, certificate and key by path (the kubelet's,
    beside the files it names)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "local", "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [
            {"name": user, "user": {"client-certificate": str(cert), "client-key": str(key)}}
        ],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
        "current-context": "local",
    }
    _write_private(path, config)


def _write_private(path: Path, config: dict[str, Any]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(config, f)
