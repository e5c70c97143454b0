"""What a fresh local control plane is given before anything uses it: the harness's
CustomResourceDefinitions and its admission policies, server-side applied as the admin.

A CRD is not usable the moment it is written: it is first Established, and only then is its
storage served (a list answers 429 until it is). :func:`apply_crds` waits for both, so that a
test or ``tiny-harness up`` that starts right after never sees a type that is half there.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import yaml

from tiny_harness.devcluster.admin_http import AdminHttp
from tiny_harness.devcluster.failures import ClusterError


def apply_admission(admin: AdminHttp, docs: list[dict[str, Any]]) -> None:
    """Server-side apply admission policies and their bindings (the harness's identity policy,
    ``kube/admission.py``). The API server starts enforcing a policy within a moment of the
    write; a caller that depends on it being enforced waits for a refusal."""
    for doc in docs:
        plural = {
            "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
            "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
        }[doc["kind"]]
        name = doc["metadata"]["name"]
        resp = admin.request(
            "PATCH",
            f"/apis/admissionregistration.k8s.io/v1/{plural}/{name}"
            "?fieldManager=tiny-harness&force=true",
            body=json.dumps(doc).encode(),
            content_type="application/apply-patch+yaml",
        )
        if resp.status >= 300:
            raise ClusterError(
                f"applying the {doc['kind']} {name} failed ({resp.status}): "
                f"{resp.body.decode()[:500]}"
            )


def apply_crds(admin: AdminHttp, directory: Path, timeout: float = 30.0) -> list[str]:
    """Server-side apply every CRD in ``directory`` and wait until each is established."""
    names: list[str] = []
    served: list[str] = []
    for path in sorted(directory.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc:
                continue
            name = doc["metadata"]["name"]
            resp = admin.request(
                "PATCH",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                f"{name}?fieldManager=tiny-harness&force=true",
                body=json.dumps(doc).encode(),
                content_type="application/apply-patch+yaml",
            )
            if resp.status >= 300:
                raise ClusterError(
                    f"applying {path.name} failed ({resp.status}): {resp.body.decode()[:500]}"
                )
            names.append(name)
            spec = doc["spec"]
            for version in spec["versions"]:
                served.append(f"/apis/{spec['group']}/{version['name']}/{spec['names']['plural']}")
    deadline = time.monotonic() + timeout
    for name in names:
        while not _established(admin, name):
            if time.monotonic() > deadline:
                raise ClusterError(f"the CRD {name} was not established within {timeout:.0f}s")
            time.sleep(0.05)
    # Established is not yet servable: until its storage is initialised a list gets 429.
    for url in served:
        while admin.request("GET", f"{url}?limit=1").status != 200:
            if time.monotonic() > deadline:
                raise ClusterError(f"{url} was not served within {timeout:.0f}s")
            time.sleep(0.05)
    return names


def _established(admin: AdminHttp, name: str) -> bool:
    resp = admin.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    if resp.status != 200:
        return False
    conditions: list[dict[str, Any]] = (resp.json().get("status") or {}).get("conditions") or []
    for c in conditions:
        if c["type"] == "NonStructuralSchema" and c["status"] == "True":
            raise ClusterError(f"the CRD {name} is not structural: {c.get('message')}")
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)
