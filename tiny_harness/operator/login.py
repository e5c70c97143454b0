"""How the operator's kopf instances log in to the API server.

In a pod it is the pod's ServiceAccount, and the API server is where the kubelet says it is:
``KUBERNETES_SERVICE_HOST`` and ``KUBERNETES_SERVICE_PORT``, as client-go and the API client of
:mod:`tiny_harness.kube.client` find it. kopf's own service-account login names
``https://kubernetes.default.svc`` instead, which needs the cluster's DNS: with CoreDNS away or
slow, the operator could not start although the API server was there. Elsewhere it is the
kubeconfig (``$KUBECONFIG`` or ``~/.kube/config``), as for every other client of the project.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import kopf

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def in_cluster_server(environ: Mapping[str, str]) -> str | None:
    """The API server's URL from the kubelet's service variables, or None outside a pod."""
    host = environ.get("KUBERNETES_SERVICE_HOST", "").strip()
    port = environ.get("KUBERNETES_SERVICE_PORT", "").strip()
    if not host or not port:
        return None
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 service address
    return f"https://{host}:{port}"


def service_account(
    *,
    trust_env: bool = False,
    directory: Path = SERVICE_ACCOUNT,
    environ: Mapping[str, str] = os.environ,
) -> kopf.ConnectionInfo | None:
    """The pod's ServiceAccount as kopf's connection, or None when this is not a pod (no token
    mounted, or no service variables). The token is read on every login: kopf logs in again
    when the API server answers 401, which is how a rotated (projected) token is picked up."""
    server = in_cluster_server(environ)
    token_path = directory / "token"
    if server is None or not token_path.is_file():
        return None
    token = token_path.read_text(encoding="utf-8").strip()
    ca = directory / "ca.crt"
    ns = directory / "namespace"
    namespace = ns.read_text(encoding="utf-8").strip() if ns.is_file() else ""
    return kopf.ConnectionInfo(
        server=server,
        ca_path=str(ca) if ca.is_file() else None,
        token=token or None,
        default_namespace=namespace or None,
        trust_env=trust_env,
        priority=20,  # above a kubeconfig's (10), as kopf ranks its own service-account login
    )


def login(*, settings: kopf.OperatorSettings, **kwargs: Any) -> kopf.ConnectionInfo | None:
    """kopf's login handler: the ServiceAccount in a pod, else the kubeconfig."""
    if "KUBECONFIG" not in os.environ:
        found = service_account(trust_env=settings.networking.trust_env)
        if found is not None:
            return found
    return kopf.login_with_kubeconfig(settings=settings, **kwargs)
