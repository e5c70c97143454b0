"""The Helm chart: it lints and renders, refuses wrong values by name, passes the API server's
own validation and restricted Pod Security, and its RBAC is exactly what its README says and
enough for the operator to run tasks, checked on the real authorizer of the local control plane
with tokens minted for the chart's ServiceAccounts."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.eventually import eventually
from tests.integration.chart_support import (
    CHART,
    RELEASE,
    Helm,
    build_helm,
    can_i,
    documented,
    find,
    granted,
    permission_table,
    service_account_kubeconfig,
    set_args,
    settings_file,
)
from tests.release_check_support import serving
from tiny_harness.core.destinations import DestinationSettings
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.settings import GatewaySettings, Settings
from tiny_harness.kube.admission import exempt_users, sender_policy
from tiny_harness.kube.client import HarnessTasks, connect
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.kube.messages import HarnessMessages
from tiny_harness.kube.names import API_VERSION, KIND, MESSAGE_KIND, TURN_KIND
from tiny_harness.models.config import parse_provider_settings

EXAMPLE = (REPO_ROOT / "examples" / "task.yaml").read_text()
OPERATOR_SA = f"{RELEASE}-operator"
GATEWAY_SA = f"{RELEASE}-gateway"

#: Value sets the chart must render and lint cleanly with ("{ns}" is the test's namespace).
CONFIGURATIONS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "namespaced": {"watchNamespace": "{ns}"},
    "everything-on": {
        "watchNamespace": "{ns}",
        "gateway.participantIdentity": "tokenreview",
        "gateway.service.type": "NodePort",
        "gateway.service.nodePort": 30080,
        "networkPolicy.enabled": True,
        "serviceMonitor.enabled": True,
        "model.existingSecret": "model-keys",
        "tracing.otlpEndpoint": "http://otel-collector.monitoring:4318",
        "tracing.sampleRatio": 0.25,
        "tracing.headersSecret": "otel-credentials",
    },
    "anthropic": {
        "model.provider": "anthropic",
        "model.model": "claude-sonnet-4-5",
        "model.reasoningEffort": "medium",
    },
    "openai-compatible": {
        "model.model": "qwen3",
        "model.models": ["qwen3", "llama4"],
        "model.baseUrl": "http://vllm.models.svc:8000/v1",
        "model.api": "chat",
        "model.contextWindowTokens": 32768,
        "operator.budget.maxTokens": 200000,
        "operator.budget.onExceeded": "fail",
    },
}


#: What the gateway's quotas count (``gateway.max_<kind>_per_<scope>``).
QUOTA_KINDS = ("messages", "message_bytes", "live_tasks")


def values_for(name: str, namespace: str) -> dict[str, Any]:
    return {
        k: v.format(ns=namespace) if isinstance(v, str) else v
        for k, v in CONFIGURATIONS[name].items()
    }


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm(build_helm(), tmp_path_factory.mktemp("helm-home"))


@dataclass(frozen=True)
class Release:
    """An installed release and kubeconfigs for its two ServiceAccounts."""

    operator: Path
    gateway: Path


@pytest.fixture
def install(
    helm: Helm, kubeconfig: Path, namespace: str, tmp_path: Path
) -> Iterator[Callable[[dict[str, Any]], Release]]:
    """``helm install`` the chart for real into the test's namespace (uninstalled afterwards,
    which also removes its cluster-scoped RBAC)."""
    installed: list[bool] = []

    def install_(values: dict[str, Any]) -> Release:
        helm.install(kubeconfig, namespace, values)
        installed.append(True)
        return Release(
            operator=service_account_kubeconfig(
                kubeconfig, namespace, OPERATOR_SA, tmp_path / "operator.kubeconfig"
            ),
            gateway=service_account_kubeconfig(
                kubeconfig, namespace, GATEWAY_SA, tmp_path / "gateway.kubeconfig"
            ),
        )

    yield install_
    if installed:
        helm.uninstall(kubeconfig, namespace)


# -- Rendering ----------------------------------------------------------------------------------


@pytest.mark.parametrize("configuration", list(CONFIGURATIONS))
def test_chart_lints_and_renders_without_error(helm: Helm, configuration: str) -> None:
    values = values_for(configuration, "tiny-harness")

    lint = helm.lint(values)
    docs = helm.render("tiny-harness", values)

    assert "0 chart(s) failed" in lint.stdout
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "ServiceAccount", "ConfigMap", "Service"} <= kinds
    assert "CustomResourceDefinition" not in kinds  # --skip-crds: the fixture installs them
    assert "Secret" not in kinds


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"operator.replicas": -1}, "/operator/replicas"),
        ({"model.apiKey": "sk-inline-secret"}, "'apiKey' not allowed"),
        ({"openai": {"api_key": "sk-inline-secret"}}, "'openai' not allowed"),
        ({"gateway.participantIdentity": "jwt"}, "/gateway/participantIdentity"),
        ({"model.provider": "azure"}, "/model/provider"),
        ({"watchNamespace": "Not_A_Namespace"}, "/watchNamespace"),
        ({"model.existingSecret": "Bad Secret"}, "/model/existingSecret"),
        ({"watchNamespace": "work", "gateway.namespace": "other"}, "gateway.namespace"),
        ({"operator.metrics.port": 8080}, "operator.metrics.port"),
    ],
    ids=[
        "negative-replicas",
        "inline-api-key",
        "inline-provider-key",
        "unknown-identity-mode",
        "unknown-provider",
        "bad-namespace",
        "bad-secret-name",
        "gateway-outside-watched-namespace",
        "metrics-on-health-port",
    ],
)
def test_a_wrong_value_fails_with_a_message_naming_it(
    helm: Helm, values: dict[str, Any], named: str
) -> None:
    result = helm.template("tiny-harness", values, check=False)

    assert result.returncode != 0
    assert named in result.stderr
    assert "sk-inline-secret" not in result.stdout + result.stderr


@pytest.mark.parametrize("configuration", ["defaults", "namespaced"])
def test_the_identity_policy_is_the_one_kube_admission_defines(
    helm: Helm, configuration: str
) -> None:
    """The rules live in tiny_harness/kube/admission.py; the chart renders the same policy
    with its release's ServiceAccounts exempt, bound cluster-wide or to watchNamespace."""
    namespace = "team-a"
    values = values_for(configuration, namespace)
    docs = helm.render(namespace, values)
    rendered = [
        d
        for d in docs
        if d["kind"] in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
    ]
    name = f"tiny-harness-{namespace}-identity"
    expected = sender_policy(
        name,
        gateway=exempt_users([f"system:serviceaccount:{namespace}:tiny-harness-gateway"]),
        operator=exempt_users([f"system:serviceaccount:{namespace}:tiny-harness-operator"]),
        namespace=namespace if configuration == "namespaced" else None,
    )

    for doc in rendered:
        doc["metadata"].pop("labels")
    assert rendered == expected
    switched_off = helm.render(namespace, {**values, "admissionPolicy.enabled": False})
    assert not [d for d in switched_off if d["kind"].startswith("ValidatingAdmissionPolicy")]


@pytest.mark.parametrize(
    "configuration", ["defaults", "namespaced", "anthropic", "openai-compatible"]
)
def test_settings_file_is_one_the_harness_accepts(helm: Helm, configuration: str) -> None:
    values = values_for(configuration, "tiny-harness")

    raw = settings_file(helm.render("tiny-harness", values))
    settings = Settings.parse(raw)
    provider = parse_provider_settings(settings.provider, settings.provider_section)

    assert settings.provider == values.get("model.provider", "openai")
    assert provider.model == values.get("model.model", "gpt-5-mini")
    assert provider.base_url == values.get("model.baseUrl")
    assert settings.operator.namespaces == (("tiny-harness",) if "watchNamespace" in values else ())
    assert settings.gateway.bind == "0.0.0.0:8080"
    assert settings.gateway.namespace == "tiny-harness"
    assert settings.operator.ttl_seconds_after_finished == 604800
    budget = settings.operator.budget
    if "operator.budget.maxTokens" in values:
        assert budget is not None
        assert (budget.max_tokens, budget.max_model_calls, budget.on_exceeded) == (
            200000,
            None,
            "fail",
        )
    else:
        assert budget is None


#: What the notes say of an install in which any pod can claim to be anyone.
FORGEABLE = "WARNING: THIS INSTALL IS FORGEABLE."
PROXY = [{"podSelector": {"matchLabels": {"app": "auth-proxy"}}}]


def notes(helm: Helm, kubeconfig: Path, values: dict[str, Any]) -> str:
    """What ``helm install`` prints after NOTES: for these values (a dry run, which still asks
    the local API server for its version and APIs)."""
    out = helm.run(
        "install", RELEASE, str(CHART), "--namespace", "team-a", "--skip-crds",
        "--dry-run=client", *set_args(values), kubeconfig=kubeconfig,
    ).stdout  # fmt: skip
    assert "NOTES:" in out, out
    return out.split("NOTES:", 1)[1]


def test_by_default_the_gateway_takes_participants_by_token_and_trusts_no_header(
    helm: Helm, kubeconfig: Path
) -> None:
    docs = helm.render("tiny-harness", {})

    gateway = Settings.parse(settings_file(docs)).gateway
    assert gateway.participant_identity == "tokenreview"
    reviews = [
        rule
        for d in docs
        if d["kind"] == "ClusterRole"
        for rule in d.get("rules", [])
        if "tokenreviews" in rule.get("resources", [])
    ]
    assert reviews == [
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]}
    ]
    said = notes(helm, kubeconfig, {})
    assert FORGEABLE not in said
    assert "X-Participant-Id" not in said
    assert "Authorization: Bearer $(kubectl create token <your-sa>)" in said


@pytest.mark.parametrize(
    "values",
    [
        {"gateway.participantIdentity": "header"},
        {"gateway.participantIdentity": "header", "networkPolicy.enabled": True},
        {"gateway.participantIdentity": "header", "networkPolicy.gatewayFrom": PROXY},
    ],
    ids=["no-policy", "policy-open-to-all", "peers-without-policy"],
)
def test_a_header_install_without_a_policy_admitting_only_the_proxy_is_called_forgeable(
    helm: Helm, kubeconfig: Path, values: dict[str, Any]
) -> None:
    said = notes(helm, kubeconfig, values)

    assert FORGEABLE in said
    assert "can send\nX-Participant-Id and approve, cancel or read any task as anyone" in said
    assert "--set gateway.participantIdentity=tokenreview" in said


def test_a_header_install_behind_a_policy_that_admits_only_the_proxy_is_not_called_forgeable(
    helm: Helm, kubeconfig: Path
) -> None:
    values = {
        "gateway.participantIdentity": "header",
        "networkPolicy.enabled": True,
        "networkPolicy.gatewayFrom": PROXY,
    }
    said = notes(helm, kubeconfig, values)
    [policy] = [
        d
        for d in helm.render("team-a", values)
        if d["kind"] == "NetworkPolicy" and d["metadata"]["name"].endswith("-gateway")
    ]

    assert FORGEABLE not in said
    assert "trusts X-Participant-Id from the peers of networkPolicy.gatewayFrom" in said
    assert "kubectl port-forward" in said
    assert [rule["from"] for rule in policy["spec"]["ingress"]] == [PROXY]


def test_token_audiences_and_the_failure_limit_reach_the_gateways_settings(helm: Helm) -> None:
    values = {
        "gateway.participantIdentity": "tokenreview",
        "gateway.tokenAudiences": ["tiny-harness"],
        "gateway.authFailuresPerMinute": 5,
    }

    scoped = Settings.parse(settings_file(helm.render("tiny-harness", values))).gateway
    defaults = Settings.parse(settings_file(helm.render("tiny-harness", {}))).gateway
    empty = helm.template("tiny-harness", {"gateway.tokenAudiences": [""]}, check=False)

    assert (scoped.token_audiences, scoped.auth_failures_per_minute) == (("tiny-harness",), 5)
    assert (defaults.token_audiences, defaults.auth_failures_per_minute) == ((), 20)
    assert empty.returncode != 0
    assert "/gateway/tokenAudiences/0" in empty.stderr


def test_the_quotas_reach_the_gateways_settings_and_default_to_the_settings_defaults(
    helm: Helm,
) -> None:
    values = {
        "gateway.quotas.messagesPerParticipant": 50,
        "gateway.quotas.messageBytesPerParticipant": 4 * 1024 * 1024,
        "gateway.quotas.liveTasksPerParticipant": 3,
        "gateway.quotas.messagesPerNamespace": 500,
        "gateway.quotas.messageBytesPerNamespace": 3 * 1024 * 1024 * 1024,
        "gateway.quotas.liveTasksPerNamespace": 30,
    }

    chosen = Settings.parse(settings_file(helm.render("tiny-harness", values))).gateway
    defaults = Settings.parse(settings_file(helm.render("tiny-harness", {}))).gateway
    zero = helm.template("tiny-harness", {"gateway.quotas.liveTasksPerNamespace": 0}, check=False)

    quotas = [f"max_{k}_per_{s}" for s in ("participant", "namespace") for k in QUOTA_KINDS]
    assert [getattr(chosen, q) for q in quotas] == [50, 4 * 1024 * 1024, 3, 500, 3 << 30, 30]
    assert [getattr(defaults, q) for q in quotas] == [getattr(GatewaySettings(), q) for q in quotas]
    assert zero.returncode != 0
    assert "/gateway/quotas/liveTasksPerNamespace" in zero.stderr


def test_model_api_key_reaches_only_the_operator_and_only_from_the_existing_secret(
    helm: Helm,
) -> None:
    docs = helm.render(
        "tiny-harness", {"model.existingSecret": "model-keys", "model.existingSecretKey": "key"}
    )

    operator = find(docs, "Deployment", "-operator")["spec"]["template"]["spec"]
    gateway = find(docs, "Deployment", "-gateway")["spec"]["template"]["spec"]
    key_env = next(e for e in operator["containers"][0]["env"] if e["name"] == "OPENAI_API_KEY")
    assert key_env == {
        "name": "OPENAI_API_KEY",
        "valueFrom": {"secretKeyRef": {"name": "model-keys", "key": "key"}},
    }
    assert "API_KEY" not in yaml.safe_dump(gateway)
    assert settings_file(docs)["openai"]["api_key_env"] == "OPENAI_API_KEY"


def test_tracing_reaches_both_processes_with_credentials_only_from_a_secret(helm: Helm) -> None:
    default = helm.render("tiny-harness", {})
    assert Settings.parse(settings_file(default)).tracing.otlp_endpoint is None
    assert "OTEL_" not in yaml.safe_dump(default)

    docs = helm.render("tiny-harness", values_for("everything-on", "tiny-harness"))
    tracing = Settings.parse(settings_file(docs)).tracing
    assert (tracing.otlp_endpoint, tracing.sample_ratio) == (
        "http://otel-collector.monitoring:4318",
        0.25,
    )
    for component in ("-operator", "-gateway"):
        env = find(docs, "Deployment", component)["spec"]["template"]["spec"]["containers"][0][
            "env"
        ]
        assert {
            "name": "OTEL_EXPORTER_OTLP_HEADERS",
            "valueFrom": {"secretKeyRef": {"name": "otel-credentials", "key": "headers"}},
        } in env
        egress = find(docs, "NetworkPolicy", component)["spec"]["egress"]
        assert {"ports": [{"protocol": "TCP", "port": 4318}]} in egress


def test_namespaced_mode_grants_nothing_cluster_wide_and_scopes_the_operator(
    helm: Helm,
) -> None:
    # Header identity: token review, the one cluster-scoped grant, is off.
    values = {"watchNamespace": "work", "gateway.participantIdentity": "header"}
    docs = helm.render("tiny-harness", values)

    kinds = {d["kind"] for d in docs}
    assert "ClusterRole" not in kinds
    assert "ClusterRoleBinding" not in kinds
    # With the default identity, the gateway's tokenreviews ClusterRole is all there is of it.
    by_default = helm.render("tiny-harness", {"watchNamespace": "work"})
    [cluster_role] = [d for d in by_default if d["kind"] == "ClusterRole"]
    assert cluster_role["rules"] == [
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]}
    ]
    scoped = {
        d["metadata"]["name"]: d["metadata"]["namespace"]
        for d in docs
        if d["kind"] in ("Role", "RoleBinding")
    }
    # Everything in the watched namespace, but the shard Leases' Role in the release's own.
    shards = {k: v for k, v in scoped.items() if k.endswith("-operator-shards")}
    assert set(shards.values()) == {"tiny-harness"}
    assert {v for k, v in scoped.items() if k not in shards} == {"work"}
    role = next(d for d in docs if d["kind"] == "Role" and d["metadata"]["name"] in shards)
    assert [r["resources"] for r in role["rules"]] == [["leases"]]
    args = find(docs, "Deployment", "-operator")["spec"]["template"]["spec"]["containers"][0][
        "args"
    ]
    assert args[args.index("--namespace") + 1] == "work"
    assert args[args.index("--liveness") + 1] == "http://0.0.0.0:8080/healthz"
    assert args[args.index("--config") + 1] == "/etc/tiny-harness/config.toml"


# -- The API server's validation and Pod Security ------------------------------------------------


@pytest.mark.parametrize("configuration", ["defaults", "namespaced"])
def test_rendered_manifests_pass_server_side_dry_run_under_restricted_pod_security(
    helm: Helm, kubectl: Kubectl, namespace: str, configuration: str
) -> None:
    kubectl.run(
        "label", "namespace", namespace,
        "pod-security.kubernetes.io/enforce=restricted",
        "pod-security.kubernetes.io/warn=restricted",
    )  # fmt: skip
    values = {**values_for(configuration, namespace), "networkPolicy.enabled": True}
    manifests = helm.template(namespace, values).stdout
    # `helm test` runs after the install, whose ServiceAccounts its pod names: made for real.
    accounts = [d for d in yaml.safe_load_all(manifests) if d and d["kind"] == "ServiceAccount"]
    kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump_all(accounts))

    result = kubectl.run("apply", "--dry-run=server", "-f", "-", stdin=manifests, check=False)

    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr, result.stderr
    assert "pod/tiny-harness-test created (server dry run)" in result.stdout
    # The namespace does check: a pod template that is not restricted draws the warning.
    loose = find(list(yaml.safe_load_all(manifests)), "Deployment", "-operator")
    loose["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {}
    checked = kubectl.run(
        "apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(loose), check=False
    )
    assert "would violate PodSecurity" in checked.stderr


# -- RBAC on the real authorizer -----------------------------------------------------------------


def operator_values(namespace: str, model_server: ModelServer) -> dict[str, Any]:
    """Namespaced mode, with the model pointed at the scripted server and no metrics port
    (the operator runs as a local process here, not in a pod)."""
    return {
        "watchNamespace": namespace,
        "model.model": "scripted-model",
        "model.baseUrl": f"{model_server.url}/v1",
        "model.apiKeyEnv": "TINY_HARNESS_TEST_MODEL_KEY",
        "operator.metrics.enabled": False,
    }


def task_status(kubectl: Kubectl) -> dict[str, Any]:
    return dict(kubectl.get_json("ht", "hello-harness").get("status") or {})


async def test_operator_runs_a_task_under_its_own_service_account_in_namespaced_mode(
    install: Callable[[dict[str, Any]], Release],
    kubectl: Kubectl,
    namespace: str,
    model_server: ModelServer,
    tmp_path: Path,
) -> None:
    release = install(operator_values(namespace, model_server))
    # The operator reads the very settings file the chart rendered into its ConfigMap.
    config = tmp_path / "config.toml"
    config.write_text(kubectl.get_json("configmap", f"{RELEASE}-settings")["data"]["config.toml"])
    # As in its pod: the downward API names its namespace, where its shard Leases live.
    operator = OperatorProcess(
        release.operator, namespace, tmp_path, config, "chart-op", env={"POD_NAMESPACE": namespace}
    ).start()
    try:
        assert kubectl.apply(EXAMPLE).returncode == 0

        parked = eventually(
            lambda: (s := task_status(kubectl)).get("state") == "TASK_STATE_INPUT_REQUIRED" and s,
            within=60,
            what="the operator to initialise and park the example task",
        )
        assert parked["subState"] == "awaiting-next-message"
        eventually(
            lambda: [
                e
                for e in kubectl.get_json("events")["items"]
                if e["involvedObject"].get("name") == "hello-harness"
                and e["reason"] == "Initialised"
            ],
            # As long as the park may take: the event is written just after the status that
            # initialised the task, by the same pass, on a machine as loaded as that one.
            within=60,
            what="the operator's Initialised event",
        )

        # A participant's message, written with the gateway's ServiceAccount.
        api = await connect(release.gateway)
        try:
            await HarnessMessages(api, namespace).send(
                MessageSpec(
                    task="hello-harness",
                    message_id="m-chart-1",
                    sender="alice",
                    parts=(MessagePart(text="What do you do?"),),
                ),
                task=await HarnessTasks(api, namespace).get("hello-harness"),
            )
        finally:
            await api.close()

        answered = eventually(
            lambda: (
                (s := task_status(kubectl)).get("turn", 0) >= 1
                and s.get("state") == "TASK_STATE_INPUT_REQUIRED"
                and not s.get("runner")
                and s
            ),
            within=60,
            what="the operator to take a turn on the message",
        )
        assert answered["subState"] == "awaiting-next-message"
        assert len(await model_server.control.requests()) == 1
        # The only replica holds every shard, through Leases its Role lets it write.
        leases = kubectl.get_json("leases", "-l", "tiny-harness.dev/shard-role=shard")["items"]
        assert sorted(lease["spec"].get("holderIdentity") for lease in leases) == ["chart-op"] * 16
        assert kubectl.get_json("harnessturns")["items"], "the turn journal was not written"
    finally:
        operator.stop()
    log = operator.log()
    assert "Forbidden" not in log, log[-3000:]
    assert " 403" not in log, log[-3000:]


@pytest.mark.parametrize(
    ("who", "verb", "resource", "subresource"),
    [
        ("gateway", "patch", "harnesstasks", "status"),
        ("gateway", "update", "harnesstasks", "status"),
        ("gateway", "create", "harnessturns", ""),
        ("gateway", "delete", "harnesstasks", ""),
        ("gateway", "get", "secrets", ""),
        ("gateway", "create", "tokenreviews", ""),
        ("gateway", "create", "harnesstoolservers", ""),
        ("gateway", "get", "harnesstoolservers", ""),
        ("operator", "update", "harnesstoolservers", ""),
        ("operator", "patch", "harnesstoolservers", ""),
        ("operator", "get", "secrets", ""),
        ("operator", "list", "secrets", ""),
        ("operator", "delete", "harnessturns", ""),
        ("operator", "deletecollection", "harnessmessages", ""),
        ("operator", "list", "namespaces", ""),
        ("operator", "create", "pods", ""),
    ],
)
def test_service_accounts_are_denied_what_they_must_not_do(
    install: Callable[[dict[str, Any]], Release],
    namespace: str,
    who: str,
    verb: str,
    resource: str,
    subresource: str,
) -> None:
    # Header identity, where the gateway has no business reviewing tokens either.
    release = install({"watchNamespace": namespace, "gateway.participantIdentity": "header"})

    identity = release.gateway if who == "gateway" else release.operator

    assert not can_i(identity, namespace, verb, resource, subresource)
    assert can_i(identity, namespace, "watch", "harnesstasks")  # the identity itself works


def test_gateway_cannot_write_task_status_and_operator_cannot_read_secrets(
    install: Callable[[dict[str, Any]], Release], kubectl: Kubectl, namespace: str
) -> None:
    release = install({"watchNamespace": namespace})
    kubectl.apply(EXAMPLE)
    kubectl.run("create", "secret", "generic", "model-keys", "--from-literal=api-key=sk-x")
    as_gateway = Kubectl(release.gateway, namespace)
    as_operator = Kubectl(release.operator, namespace)

    patched = as_gateway.run(
        "patch", "ht", "hello-harness", "--subresource=status", "--type=merge",
        "-p", '{"status": {"state": "TASK_STATE_COMPLETED"}}', check=False,
    )  # fmt: skip
    read = as_operator.run("get", "secret", "model-keys", "-o", "yaml", check=False)

    assert patched.returncode != 0
    assert "forbidden" in patched.stderr.lower()
    assert "harnesstasks/status" in patched.stderr
    assert task_status(kubectl).get("state") != "TASK_STATE_COMPLETED"
    assert read.returncode != 0
    assert "forbidden" in read.stderr.lower()
    assert "sk-x" not in read.stdout
    # ... while what each needs works with the same credentials.
    assert as_gateway.run("get", "ht", "hello-harness", check=False).returncode == 0
    assert as_operator.run("get", "hmsg", check=False).returncode == 0
    # ... and only in the watched namespace.
    assert not can_i(release.operator, "default", "list", "harnesstasks")
    assert not can_i(release.gateway, "default", "create", "harnesstasks")


@pytest.mark.parametrize(
    ("mode", "identity"),
    [("namespaced", "header"), ("cluster", "tokenreview")],
)
def test_granted_permissions_are_exactly_the_readme_table(
    install: Callable[[dict[str, Any]], Release], namespace: str, mode: str, identity: str
) -> None:
    values: dict[str, Any] = {"gateway.participantIdentity": identity}
    if mode == "namespaced":
        values["watchNamespace"] = namespace
    release = install(values)

    for service_account, kubeconfig in (
        (OPERATOR_SA, release.operator),
        (GATEWAY_SA, release.gateway),
    ):
        expected = documented(service_account, cluster_mode=mode == "cluster", identity=identity)
        assert granted(kubeconfig, namespace) == expected, (
            f"{service_account}: the API server's grants differ from {CHART}/README.md"
        )


@pytest.mark.parametrize("mode", ["namespaced", "cluster"])
def test_the_operator_may_get_only_the_secrets_named_for_tool_servers(
    install: Callable[[dict[str, Any]], Release], kubectl: Kubectl, namespace: str, mode: str
) -> None:
    values: dict[str, Any] = {"headerSecrets": ["mcp-headers"]}
    if mode == "namespaced":
        values["watchNamespace"] = namespace
    release = install(values)
    kubectl.run("create", "secret", "generic", "mcp-headers", "--from-literal=token=t-1")
    kubectl.run("create", "secret", "generic", "model-keys", "--from-literal=api-key=sk-x")
    as_operator = Kubectl(release.operator, namespace)

    named = as_operator.run("get", "secret", "mcp-headers", "-o", "name", check=False)
    other = as_operator.run("get", "secret", "model-keys", "-o", "yaml", check=False)
    listed = as_operator.run("get", "secrets", check=False)

    assert named.returncode == 0, named.stderr
    assert other.returncode != 0
    assert "sk-x" not in other.stdout
    assert listed.returncode != 0
    assert not can_i(release.operator, namespace, "watch", "secrets")
    expected = documented(
        OPERATOR_SA,
        cluster_mode=mode == "cluster",
        identity="tokenreview",
        secret_names=("mcp-headers",),
    )
    assert granted(release.operator, namespace) == expected


def test_readme_table_never_grants_the_gateway_task_status() -> None:
    rows = permission_table()

    assert {r.service_account for r in rows} == {OPERATOR_SA, GATEWAY_SA}
    assert [r for r in rows if r.service_account == GATEWAY_SA and "status" in r.resource] == []


@pytest.mark.parametrize("configuration", ["defaults", "namespaced"])
def test_the_installed_identity_policy_refuses_impersonation_on_the_real_authorizer(
    install: Callable[[dict[str, Any]], Release],
    kubectl: Kubectl,
    namespace: str,
    kubeconfig: Path,
    configuration: str,
) -> None:
    """The chart's policy as installed, in both chart modes. The local control plane's own
    policy refuses alice as bob too, so the chart's is told apart by what only it refuses: a
    ServiceAccount that has the gateway's name in another namespace (the local policy exempts
    that name in any namespace; the chart exempts only its own release's)."""
    install(values_for(configuration, namespace))
    outsider = f"t-{namespace[2:]}-x"
    subprocess.run(
        ["kubectl", f"--kubeconfig={kubeconfig}", "create", "namespace", outsider],
        check=True, capture_output=True,
    )  # fmt: skip
    Kubectl(kubeconfig, outsider).run("create", "serviceaccount", GATEWAY_SA)
    impostor = f"system:serviceaccount:{outsider}:{GATEWAY_SA}"
    ours = f"system:serviceaccount:{namespace}:{GATEWAY_SA}"
    kubectl.run(
        "create", "role", "speak", "--verb=create",
        "--resource=harnessmessages,harnesstasks,harnessturns",
    )  # fmt: skip
    kubectl.run(
        "create", "rolebinding", "speak", "--role=speak", "--user=alice",
        f"--serviceaccount={outsider}:{GATEWAY_SA}", f"--serviceaccount={namespace}:{GATEWAY_SA}",
    )  # fmt: skip
    policy = f"{RELEASE}-{namespace}-identity"

    def send(user: str, sender: str) -> subprocess.CompletedProcess[str]:
        body = {
            "apiVersion": API_VERSION,
            "kind": MESSAGE_KIND,
            "metadata": {"name": f"m-{uuid.uuid4().hex[:8]}"},
            "spec": {"task": "release", "messageId": "m", "sender": sender,
                     "parts": [{"text": "ship it"}]},
        }  # fmt: skip
        return kubectl.run(
            "create", "--dry-run=server", "-f", "-", f"--as={user}",
            stdin=json.dumps(body), check=False,
        )  # fmt: skip

    refused = eventually(
        lambda: policy in (r := send(impostor, "alice")).stderr and r,
        within=30,
        what=f"the chart's policy {policy} to be enforced",
    )
    assert "written by " + impostor in refused.stderr
    assert send(ours, "alice").returncode == 0, "the release's gateway speaks for participants"
    as_bob = send("alice", "bob")
    assert as_bob.returncode != 0
    assert "spec.sender is bob, but this message is written by alice" in as_bob.stderr

    def create(user: str, kind: str, spec: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        body = {
            "apiVersion": API_VERSION,
            "kind": kind,
            "metadata": {"name": f"o-{uuid.uuid4().hex[:8]}"},
            "spec": spec,
        }
        return kubectl.run(
            "create", "--dry-run=server", "-f", "-", f"--as={user}",
            stdin=json.dumps(body), check=False,
        )  # fmt: skip

    child = {"goal": "g", "parent": {"taskId": "release"},
             "participants": [{"id": "alice", "role": "assignee"}]}  # fmt: skip
    # Only the release's own gateway creates children (it checks the caller's role first).
    assert policy in create(impostor, KIND, child).stderr
    assert create(ours, KIND, child).returncode == 0
    assert "spec.parent is set by the harness alone" in create("alice", KIND, child).stderr
    # Nobody but the operator writes the journal, the release's gateway included (the local
    # policy refuses it too, and either may be the one that answers).
    record = {"task": "release", "turn": 1, "chunk": 0, "entries": []}
    forged = create(ours, TURN_KIND, record)
    assert forged.returncode != 0
    assert "HarnessTurn records are the journal the operator keeps" in forged.stderr


def test_the_grafana_dashboard_is_a_configmap_the_sidecar_finds_only_when_enabled(
    helm: Helm,
) -> None:
    values = {"grafanaDashboard.enabled": True}
    docs = helm.render("team-a", values)
    [dashboard] = [
        d for d in docs if d["kind"] == "ConfigMap" and "dashboard" in d["metadata"]["name"]
    ]

    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    shipped = json.loads((CHART / "dashboards/tiny-harness.json").read_text())
    assert json.loads(dashboard["data"]["tiny-harness.json"]) == shipped
    assert "0 chart(s) failed" in helm.lint(values).stdout
    off = helm.render("team-a", {})
    assert not [d for d in off if d["metadata"]["name"].endswith("-dashboard")]


def test_the_operator_reaches_only_the_destinations_the_values_name(helm: Helm) -> None:
    default = Settings.parse(settings_file(helm.render("tiny-harness", {})))
    assert default.operator.destinations == DestinationSettings()  # loopback and metadata: no
    listed = {
        "operator.destinations.allowedCidrs": ["10.20.0.0/16", "169.254.170.2/32"],
        "operator.destinations.allowedHosts": ["vault.internal"],
    }
    chosen = Settings.parse(settings_file(helm.render("tiny-harness", listed)))
    assert chosen.operator.destinations == DestinationSettings(
        allowed_cidrs=("10.20.0.0/16", "169.254.170.2/32"), allowed_hosts=("vault.internal",)
    )
    wrong = helm.template(
        "tiny-harness", {"operator.destinations.allowedCidrs": ["everywhere"]}, check=False
    )
    assert wrong.returncode != 0
    assert "/operator/destinations/allowedCidrs/0" in wrong.stderr

    tools = {"to": [{"ipBlock": {"cidr": "203.0.113.10/32"}}], "ports": [{"port": 443}]}
    docs = helm.render(
        "tiny-harness", {"networkPolicy.enabled": True, "networkPolicy.outbound": [tools]}
    )
    egress = find(docs, "NetworkPolicy", "-operator")["spec"]["egress"]
    assert tools in egress
    [api_server] = [rule for rule in egress if {"port": 6443, "protocol": "TCP"} in rule["ports"]]
    v4 = ["169.254.0.0/16", "168.63.129.16/32", "100.100.100.200/32", "192.0.0.192/32"]
    v6 = ["fe80::/10", "fd00:ec2::254/128", "fd00:ec2::23/128"]
    assert api_server["to"] == [
        {"ipBlock": {"cidr": "0.0.0.0/0", "except": v4}},
        {"ipBlock": {"cidr": "::/0", "except": v6}},
    ]
    named = [{"ipBlock": {"cidr": "10.0.0.1/32"}}]
    docs = helm.render(
        "tiny-harness", {"networkPolicy.enabled": True, "networkPolicy.apiServerTo": named}
    )
    for component in ("-operator", "-gateway"):
        rules = find(docs, "NetworkPolicy", component)["spec"]["egress"]
        [api_server] = [r for r in rules if {"port": 6443, "protocol": "TCP"} in r["ports"]]
        assert api_server["to"] == named


def test_the_models_reach_and_the_depth_bound_reach_the_settings(helm: Helm) -> None:
    default = Settings.parse(settings_file(helm.render("tiny-harness", {})))
    assert (default.operator.reach, default.operator.max_sub_task_depth) == ((), 8)
    chosen = Settings.parse(
        settings_file(
            helm.render(
                "tiny-harness", {"operator.reach": ["oncall"], "operator.maxSubTaskDepth": 3}
            )
        )
    )
    assert (chosen.operator.reach, chosen.operator.max_sub_task_depth) == (("oncall",), 3)
    deeper = helm.template("tiny-harness", {"operator.maxSubTaskDepth": 17}, check=False)
    assert deeper.returncode != 0
    assert "/operator/maxSubTaskDepth" in deeper.stderr


# -- helm test, disruption budgets, the Kubernetes versions it installs on -----------------------


def test_helm_test_runs_the_release_check_from_the_charts_own_image(helm: Helm) -> None:
    values = {"image.repository": "registry.example/th", "image.tag": "1.2.3"}
    docs = helm.render("team-a", values)

    pod = find(docs, "Pod", "-test")
    operator = find(docs, "Deployment", "-operator")

    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    [container] = pod["spec"]["containers"]
    assert container["image"] == operator["spec"]["template"]["spec"]["containers"][0]["image"]
    assert container["image"] == "registry.example/th:1.2.3"
    assert container["command"] == ["python", "-m", "tiny_harness.cli.release_check"]
    args = container["args"]
    assert args[args.index("--gateway") + 1] == f"http://{RELEASE}-gateway.team-a.svc:8080"
    assert args[args.index("--advertised") + 1] == f"http://{RELEASE}-gateway.team-a.svc:8080"
    metrics = f"http://{RELEASE}-operator-metrics.team-a.svc:9090"
    assert args[args.index("--operator-metrics") + 1] == metrics
    assert pod["spec"]["restartPolicy"] == "Never"
    # It names an account the chart makes, and holds no token of it: it asks no API.
    assert pod["spec"]["serviceAccountName"] == f"{RELEASE}-operator"
    assert pod["spec"]["automountServiceAccountToken"] is False
    # The Services it asks are the chart's own.
    services = {d["metadata"]["name"] for d in docs if d["kind"] == "Service"}
    assert {f"{RELEASE}-gateway", f"{RELEASE}-operator-metrics"} <= services


def test_helm_test_asks_only_what_the_release_has(helm: Helm) -> None:
    args = find(
        helm.render("team-a", {"gateway.enabled": False, "operator.metrics.enabled": False}),
        "Pod",
        "-test",
    )["spec"]["containers"][0]["args"]
    switched_off = helm.render("team-a", {"tests.enabled": False})

    assert "--gateway" not in args
    assert "--operator-metrics" not in args
    assert not [d for d in switched_off if d["kind"] == "Pod"]


def test_the_release_check_in_the_test_pod_passes_against_what_it_checks(
    helm: Helm, tmp_path: Path
) -> None:
    """The pod's command and arguments, run here against a gateway and an operator metrics
    endpoint served locally in their place."""
    pod = find(helm.render("team-a", {}), "Pod", "-test")
    [container] = pod["spec"]["containers"]
    with serving() as (gateway, metrics):
        args = list(container["args"])
        args[args.index("--gateway") + 1] = gateway
        args[args.index("--advertised") + 1] = gateway
        args[args.index("--operator-metrics") + 1] = metrics
        command = [sys.executable, *container["command"][1:], *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "gateway: the agent card of" in done.stdout
    assert "operator: ready" in done.stdout


def test_disruption_budgets_cover_each_component_when_enabled(helm: Helm) -> None:
    assert not [d for d in helm.render("team-a", {}) if d["kind"] == "PodDisruptionBudget"]

    docs = helm.render(
        "team-a",
        {
            "operator.replicas": 3,
            "operator.podDisruptionBudget.enabled": True,
            "operator.podDisruptionBudget.minAvailable": "50%",
            "gateway.podDisruptionBudget.enabled": True,
        },
    )

    for component in ("operator", "gateway"):
        budget = find(docs, "PodDisruptionBudget", f"-{component}")
        deployment = find(docs, "Deployment", f"-{component}")
        assert budget["spec"]["selector"] == deployment["spec"]["selector"]
    assert find(docs, "PodDisruptionBudget", "-operator")["spec"] == {
        "minAvailable": "50%",
        "selector": find(docs, "Deployment", "-operator")["spec"]["selector"],
    }
    assert find(docs, "PodDisruptionBudget", "-gateway")["spec"]["maxUnavailable"] == 1


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"gateway.podDisruptionBudget.minAvailable": -1}, "minAvailable"),
        (
            {
                "operator.podDisruptionBudget.enabled": True,
                "operator.podDisruptionBudget.maxUnavailable": None,
            },
            "operator.podDisruptionBudget: set minAvailable or maxUnavailable",
        ),
        ({"operator.podDisruptionBudget.maxUnavailable": "half"}, "maxUnavailable"),
    ],
    ids=["negative", "no-size", "not-a-count-or-percentage"],
)
def test_a_budget_without_a_size_fails_naming_it(
    helm: Helm, values: dict[str, Any], named: str
) -> None:
    result = helm.template("team-a", values, check=False)

    assert result.returncode != 0
    assert named in result.stderr


def test_the_chart_refuses_a_kubernetes_older_than_it_needs(helm: Helm) -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())

    old = helm.run("template", RELEASE, str(CHART), "--kube-version", "1.29.9", check=False)
    new = helm.run("template", RELEASE, str(CHART), "--kube-version", "1.30.0", check=False)

    assert chart["kubeVersion"] == ">=1.30.0-0"
    assert old.returncode != 0
    assert "chart requires kubeVersion: >=1.30.0-0" in old.stderr
    assert new.returncode == 0, new.stderr
