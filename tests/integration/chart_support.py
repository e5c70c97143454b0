"""Helpers for the chart tests: the pinned helm binary, rendering and installing the chart,
kubeconfigs for its ServiceAccounts (tokens minted with the TokenRequest API), what the API
server's authorizer grants them, and the permission table in the chart's README."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tiny_harness.kube.crd import REPO_ROOT

CHART = REPO_ROOT / "charts" / "tiny-harness"
CHART_README = CHART / "README.md"
HELM_BUILD = REPO_ROOT / "hack" / "helm" / "build.sh"
#: The release name the README's permission table is written for.
RELEASE = "tiny-harness"

#: What the bootstrap policy lets every authenticated user do; not the chart's doing.
EVERYONE = frozenset(
    {
        ("authentication.k8s.io", "selfsubjectreviews"),
        ("authorization.k8s.io", "selfsubjectaccessreviews"),
        ("authorization.k8s.io", "selfsubjectrulesreviews"),
    }
)

#: (apiGroup, resource) -> verbs
Permissions = dict[tuple[str, str], frozenset[str]]


def build_helm() -> Path:
    """The helm binary of the pin in hack/helm, built on first use and cached per pin."""
    proc = subprocess.run(["bash", str(HELM_BUILD)], capture_output=True, text=True, timeout=1800)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise AssertionError(f"building helm failed (exit {proc.returncode}):\n{proc.stderr}")
    return Path(lines[-1]) / "helm"


def set_args(values: Mapping[str, Any]) -> list[str]:
    """``--set-json`` for each dotted key, so every value keeps its JSON type."""
    return [
        arg for key, value in values.items() for arg in ("--set-json", f"{key}={json.dumps(value)}")
    ]


@dataclass(frozen=True)
class Helm:
    binary: Path
    home: Path

    def run(
        self, *args: str, kubeconfig: Path | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            # Keep helm's repository cache and plugin config out of the user's home.
            "HELM_CACHE_HOME": str(self.home / "cache"),
            "HELM_CONFIG_HOME": str(self.home / "config"),
            "HELM_DATA_HOME": str(self.home / "data"),
            "KUBECONFIG": str(kubeconfig) if kubeconfig else str(self.home / "no-kubeconfig"),
        }
        proc = subprocess.run(
            [str(self.binary), *args], capture_output=True, text=True, env=env, timeout=120
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)} failed:\n{proc.stderr}")
        return proc

    def lint(
        self, values: Mapping[str, Any], *, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return self.run("lint", "--strict", str(CHART), *set_args(values), check=check)

    def template(
        self, namespace: str, values: Mapping[str, Any], *, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return self.run(
            "template",
            RELEASE,
            str(CHART),
            "--namespace",
            namespace,
            "--skip-crds",
            *set_args(values),
            check=check,
        )

    def render(self, namespace: str, values: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The chart's manifests (without its CRDs) for these values."""
        return [d for d in yaml.safe_load_all(self.template(namespace, values).stdout) if d]

    def install(
        self, kubeconfig: Path, namespace: str, values: Mapping[str, Any]
    ) -> subprocess.CompletedProcess[str]:
        # The CRDs are already on the local control plane (the cluster fixture applies them).
        return self.run(
            "install",
            RELEASE,
            str(CHART),
            "--namespace",
            namespace,
            "--skip-crds",
            *set_args(values),
            kubeconfig=kubeconfig,
        )

    def uninstall(self, kubeconfig: Path, namespace: str) -> None:
        self.run("uninstall", RELEASE, "--namespace", namespace, kubeconfig=kubeconfig)


def find(docs: list[dict[str, Any]], kind: str, suffix: str = "") -> dict[str, Any]:
    matches = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].endswith(suffix)]
    assert len(matches) == 1, f"expected one {kind} named *{suffix}, found {len(matches)}"
    return matches[0]


def settings_file(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The settings file the chart's ConfigMap carries, parsed."""
    return tomllib.loads(find(docs, "ConfigMap", "-settings")["data"]["config.toml"])


# -- ServiceAccounts, as the API server sees them ----------------------------------------------


def service_account_kubeconfig(
    admin_kubeconfig: Path, namespace: str, service_account: str, path: Path
) -> Path:
    """A kubeconfig that authenticates as the ServiceAccount with a token from the
    TokenRequest API (``kubectl create token``), the way a pod's projected token does."""
    token = subprocess.run(
        [
            "kubectl",
            f"--kubeconfig={admin_kubeconfig}",
            "create",
            "token",
            service_account,
            "-n",
            namespace,
            "--duration=1h",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.strip()
    admin = yaml.safe_load(admin_kubeconfig.read_text())
    cluster = admin["clusters"][0]["cluster"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "local",
                "cluster": {
                    "server": cluster["server"],
                    "certificate-authority-data": cluster["certificate-authority-data"],
                },
            }
        ],
        "users": [{"name": service_account, "user": {"token": token}}],
        "contexts": [
            {
                "name": service_account,
                "context": {
                    "cluster": "local",
                    "user": service_account,
                    "namespace": namespace,
                },
            }
        ],
        "current-context": service_account,
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(config, f)
    return path


_CAN_I_ROW = re.compile(r"^(\S*)\s+\[(.*?)\]\s+\[(.*?)\]\s+\[(.*?)\]\s*$")


def granted(kubeconfig: Path, namespace: str) -> Permissions:
    """What ``kubectl auth can-i --list`` says this identity may do in ``namespace`` (which
    includes its cluster-wide grants), less non-resource URLs and what everyone may do."""
    out = subprocess.run(
        ["kubectl", f"--kubeconfig={kubeconfig}", "auth", "can-i", "--list", "-n", namespace],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    permissions: dict[tuple[str, str], set[str]] = {}
    for line in out.splitlines()[1:]:
        row = _CAN_I_ROW.match(line)
        if row is None or not row[1]:
            continue  # a non-resource URL (discovery, /healthz ...)
        full, names, verbs = row[1], row[3], row[4]
        base, _, sub = full.partition("/")
        resource, _, group = base.partition(".")
        if sub:
            resource = f"{resource}/{sub}"
        if names:
            resource = f"{resource}[{names}]"
        permissions.setdefault((group, resource), set()).update(verbs.split())
    return {k: frozenset(v) for k, v in permissions.items() if k not in EVERYONE}


def can_i(
    kubeconfig: Path, namespace: str, verb: str, resource: str, subresource: str = ""
) -> bool:
    args = [
        "kubectl",
        f"--kubeconfig={kubeconfig}",
        "auth",
        "can-i",
        verb,
        resource,
        "-n",
        namespace,
    ]
    if subresource:
        args.append(f"--subresource={subresource}")
    proc = subprocess.run(args, capture_output=True, text=True, timeout=30)
    return proc.stdout.strip() == "yes"


# -- The README's permission table --------------------------------------------------------------


@dataclass(frozen=True)
class Grant:
    service_account: str
    group: str
    resource: str
    verbs: frozenset[str]
    when: str


_TABLE_HEADER = ["ServiceAccount", "apiGroup", "resource", "verbs", "when"]
_CONDITIONS = frozenset(
    {
        "always",
        "cluster mode",
        "participantIdentity=header",
        "participantIdentity=tokenreview",
        "operator.shards>0",
        "headerSecrets",
    }
)
#: The README's stand-in for the names ``headerSecrets`` lists.
SECRET_NAMES_PLACEHOLDER = "[headerSecrets]"


def permission_table(readme: Path = CHART_README) -> list[Grant]:
    """The rows of the README's table headed ``| ServiceAccount | apiGroup | resource | verbs |
    when |``."""
    lines = readme.read_text().splitlines()
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    start = next(i for i, row in enumerate(cells) if row == _TABLE_HEADER)
    grants: list[Grant] = []
    for line, row in zip(lines[start + 2 :], cells[start + 2 :], strict=True):
        if not line.startswith("|"):
            break
        sa, group, resource, verbs, when = row
        assert when in _CONDITIONS, f"README permission table: unknown condition {when!r}"
        grants.append(
            Grant(
                service_account=sa,
                group="" if group == "core" else group,
                resource=resource,
                verbs=frozenset(v.strip() for v in verbs.split(",")),
                when=when,
            )
        )
    return grants


def documented(
    service_account: str,
    *,
    cluster_mode: bool,
    identity: str,
    sharded: bool = True,
    secret_names: tuple[str, ...] = (),
) -> Permissions:
    """What the README says ``service_account`` is granted in this configuration (by default,
    the chart's: sharded, no Secrets for tool servers)."""
    applies = {"always"}
    if secret_names:
        applies.add("headerSecrets")
    if sharded:
        applies.add("operator.shards>0")
    if cluster_mode:
        applies.add("cluster mode")
    applies.add(f"participantIdentity={identity}")
    permissions: dict[tuple[str, str], frozenset[str]] = {}
    for grant in permission_table():
        if grant.service_account == service_account and grant.when in applies:
            resource = grant.resource.replace(
                SECRET_NAMES_PLACEHOLDER, f"[{' '.join(secret_names)}]"
            )
            key = (grant.group, resource)
            permissions[key] = permissions.get(key, frozenset()) | grant.verbs
    return permissions
