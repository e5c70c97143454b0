"""Identity the API server enforces: a ``ValidatingAdmissionPolicy`` that binds every write a
participant can make to the user who makes it.

Without it, anyone who may create a ``HarnessMessage`` may speak as anyone, and anyone who may
create or update a ``HarnessTask`` may attach work to someone else's task: the operator
re-checks what it takes (a sender on the task, a child owned by its parent's uid), but it
cannot know who really wrote an object. With it:

- a ``HarnessMessage`` written by a user must name that user as ``spec.sender`` (their
  Kubernetes username is their participant id, as ``kubectl harness`` assumes);
- a ``HarnessTask`` a user creates must name that user among its participants (the gateway adds
  a creator it authenticated as a reporter; a kubectl user is told to add themselves);
- ``spec.parent`` is the harness's: nobody else sets it on a create or changes it on an update.
  A sub-task is started with ``/sub-task`` (the operator creates it) or through the gateway,
  which first checks that its caller may end the parent. There is no kubectl route: a CEL
  rule cannot read the parent to check the writer's role on it;
- a task's spec is changed only as the authority table says (:mod:`tiny_harness.core.authority`,
  written as CEL by :mod:`tiny_harness.kube.authority_rules`), judged by the writer's role as
  the task stood before the change: its budget, deadlines, approval rules, reach and what it
  asks for by a reporter or an admin, never by the assignee they bound; who is on it by its
  assignee, reporter or admin, none giving a role above their own;
- ``HarnessTurn`` records are the operator's journal: nobody else writes one, the gateway
  included;
- the lifecycle annotation a child is created with is the operator's: nobody else sets or
  changes it.

The harness's own identities are exempt where they must be: the operator's ServiceAccount from
every rule (it writes children, records and status for every task), the gateway's from the two
that bind a participant (it speaks for the participants it authenticated, and creates children
for those who may end the parent), and ``system:masters`` (cluster administrators, who could
remove the policy anyway) for break-glass work and for tests that set up conversations. Status
writes go through the status subresource, which the policy does not match: RBAC gives it to
the operator alone.

The rules are defined here once. The local control plane applies :func:`local_policy`; the
chart's ``admission-policy.yaml`` is written from them (``python -m tiny_harness.kube.admission
--write``, compared by a test) with its release's ServiceAccounts, and a chart test compares
what helm renders with :func:`sender_policy`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Final

from tiny_harness.kube.authority_rules import SPEC_RULES
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.kube.names import GROUP, LIFECYCLE_ANNOTATION, MESSAGE_PLURAL, PLURAL, TURN_PLURAL

_USER: Final = "request.userInfo.username"
_TASKS: Final = f"request.resource.resource != '{PLURAL}'"
_GATEWAY: Final = "variables.gateway"

#: What a message must say about its writer.
SENDER_RULE: Final = (
    f"{_GATEWAY} || request.resource.resource != '{MESSAGE_PLURAL}' || "
    f"object.spec.sender == {_USER}"
)
SENDER_MESSAGE: Final = (
    "'spec.sender is ' + object.spec.sender + ', but this message is written by ' + "
    f"{_USER} + ': a message speaks for the user who writes it; send it as "
    "yourself (kubectl harness send), or through the A2A gateway'"
)
#: What a task must say about its creator.
CREATOR_RULE: Final = (
    f"{_GATEWAY} || {_TASKS} || request.operation != 'CREATE' || "
    "(has(object.spec.participants) && "
    f"object.spec.participants.exists(p, p.id == {_USER}))"
)
CREATOR_MESSAGE: Final = (
    f"'spec.participants does not name ' + {_USER} + ', who creates the "
    "task: add yourself (as a reporter, to follow a task you hand to others), or the task "
    "would be hidden from you'"
)
#: Only the harness links a task to a parent: no ``spec.parent`` on a create, no change of it
#: on an update (the gateway checks its caller's role on the parent before it writes one).
PARENT_RULE: Final = (
    f"{_GATEWAY} || {_TASKS} || (request.operation == 'CREATE' ? !has(object.spec.parent) : "
    "(has(object.spec.parent) ? "
    "(has(oldObject.spec.parent) && object.spec.parent == oldObject.spec.parent) : "
    "!has(oldObject.spec.parent)))"
)
PARENT_MESSAGE: Final = (
    "'spec.parent is set by the harness alone, for a participant who may end the parent: "
    "start a sub-task with /sub-task (kubectl harness cmd TASK /sub-task ...) or through the "
    "A2A gateway, and remove spec.parent'"
)
#: The turn journal is the operator's alone.
TURN_RULE: Final = f"request.resource.resource != '{TURN_PLURAL}'"
TURN_MESSAGE: Final = (
    "'HarnessTurn records are the journal the operator keeps of each turn, and ' + "
    f"{_USER} + ' may not write one: send the task a message instead (kubectl harness send)'"
)
#: The lifecycle a child is created with is the harness's to write (names.LIFECYCLE_ANNOTATION):
#: anyone else may not set it, nor change it on an update.
_ANNOTATIONS: Final = "object.metadata.annotations"
_OLD: Final = "oldObject.metadata.annotations"
LIFECYCLE_RULE: Final = (
    f"{_TASKS} || !has({_ANNOTATIONS}) || "
    f"!('{LIFECYCLE_ANNOTATION}' in {_ANNOTATIONS}) || "
    f"(request.operation == 'UPDATE' && has({_OLD}) && '{LIFECYCLE_ANNOTATION}' in {_OLD} && "
    f"{_OLD}['{LIFECYCLE_ANNOTATION}'] == {_ANNOTATIONS}['{LIFECYCLE_ANNOTATION}'])"
)
LIFECYCLE_MESSAGE: Final = (
    f"'metadata.annotations[{LIFECYCLE_ANNOTATION}] is set by the harness alone (the lifecycle "
    "of a task is server-controlled): remove it'"
)
#: Who is not checked, as a CEL expression over ``request.userInfo``.
ADMINS: Final = "'system:masters' in request.userInfo.groups"
#: The policy the local control plane applies.
LOCAL_POLICY: Final = "tiny-harness-identity"
#: The local control plane's harness identities: the ServiceAccounts the tests and ``make run``
#: give the gateway and the operator, in any namespace.
LOCAL_GATEWAY: Final = f"{_USER}.matches('^system:serviceaccount:[^:]+:tiny-harness-gateway$')"
LOCAL_OPERATOR: Final = f"{_USER}.matches('^system:serviceaccount:[^:]+:tiny-harness-operator$')"

#: Each rule and what the writer is told, in the order the API server checks them.
RULES: Final = (
    (SENDER_RULE, SENDER_MESSAGE),
    (CREATOR_RULE, CREATOR_MESSAGE),
    (PARENT_RULE, PARENT_MESSAGE),
    *SPEC_RULES,
    (TURN_RULE, TURN_MESSAGE),
    (LIFECYCLE_RULE, LIFECYCLE_MESSAGE),
)


def exempt_users(usernames: list[str]) -> str:
    """A CEL test for these exact usernames."""
    quoted = ", ".join(f"'{u}'" for u in usernames)
    return f"{_USER} in [{quoted}]"


def sender_policy(
    name: str, *, gateway: str, operator: str, namespace: str | None = None
) -> list[dict[str, Any]]:
    """The policy and its binding. ``gateway`` and ``operator`` are CEL tests of the harness's
    own identities; ``namespace`` scopes the binding to one namespace (the chart's namespaced
    mode)."""
    binding_resources: dict[str, Any] = {}
    if namespace is not None:
        binding_resources = {
            "namespaceSelector": {
                "matchLabels": {"kubernetes.io/metadata.name": namespace},
            }
        }
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [GROUP],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": [MESSAGE_PLURAL, PLURAL, TURN_PLURAL],
                    }
                ]
            },
            "matchConditions": [
                {"name": "not-an-administrator", "expression": f"!({ADMINS})"},
                {"name": "not-the-operator", "expression": f"!({operator})"},
            ],
            "variables": [{"name": "gateway", "expression": gateway}],
            "validations": [
                {"expression": rule, "messageExpression": message, "reason": "Forbidden"}
                for rule, message in RULES
            ],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            **({"matchResources": binding_resources} if binding_resources else {}),
        },
    }
    return [policy, binding]


def local_policy() -> list[dict[str, Any]]:
    """The policy as the local control plane applies it (``make run``, the tests)."""
    return sender_policy(LOCAL_POLICY, gateway=LOCAL_GATEWAY, operator=LOCAL_OPERATOR)


CHART_TEMPLATE: Final = (
    REPO_ROOT / "charts" / "tiny-harness" / "templates" / "admission-policy.yaml"
)


def _sa_test(helper: str, *, negate: bool = False) -> str:
    """A helm expression rendering :func:`exempt_users` for the release's ServiceAccount
    ``helper`` (negated: ``!(...)``), as a quoted YAML scalar."""
    test = f"{_USER} in ['system:serviceaccount:%s:%s']"
    if negate:
        test = f"!({test})"
    return (
        f'{{{{ printf "{test}" .Release.Namespace (include "tiny-harness.{helper}" .) | quote }}}}'
    )


def chart_template() -> str:
    """The chart's policy template: :func:`sender_policy` with the release's ServiceAccounts."""
    q = json.dumps
    lines = [
        "{{- /*",
        "Generated from tiny_harness/kube/admission.py by",
        "`python -m tiny_harness.kube.admission --write`: edit the rules there. The identity",
        "policy binds every write a participant can make to the user who makes it (see that",
        "module and docs/design/threat-model.md). The release's operator ServiceAccount is",
        "exempt from every rule, its gateway ServiceAccount from the ones that bind a",
        "participant, and so is system:masters. In namespaced mode the binding covers",
        "watchNamespace only.",
        "*/}}",
        "{{- if .Values.admissionPolicy.enabled }}",
        "apiVersion: admissionregistration.k8s.io/v1",
        "kind: ValidatingAdmissionPolicy",
        "metadata:",
        '  name: {{ include "tiny-harness.clusterName" . }}-identity',
        "  labels:",
        '    {{- include "tiny-harness.labels" . | nindent 4 }}',
        "spec:",
        "  failurePolicy: Fail",
        "  matchConstraints:",
        "    resourceRules:",
        "    - apiGroups:",
        f"      - {GROUP}",
        "      apiVersions:",
        "      - '*'",
        "      operations:",
        "      - CREATE",
        "      - UPDATE",
        "      resources:",
        *(f"      - {r}" for r in (MESSAGE_PLURAL, PLURAL, TURN_PLURAL)),
        "  matchConditions:",
        "  - name: not-an-administrator",
        f"    expression: {q(f'!({ADMINS})')}",
        "  - name: not-the-operator",
        f"    expression: {_sa_test('operatorServiceAccountName', negate=True)}",
        "  variables:",
        "  - name: gateway",
        f"    expression: {_sa_test('gatewayServiceAccountName')}",
        "  validations:",
    ]
    for rule, message in RULES:
        lines += [
            f"  - expression: {q(rule)}",
            f"    messageExpression: {q(message)}",
            "    reason: Forbidden",
        ]
    lines += [
        "---",
        "apiVersion: admissionregistration.k8s.io/v1",
        "kind: ValidatingAdmissionPolicyBinding",
        "metadata:",
        '  name: {{ include "tiny-harness.clusterName" . }}-identity',
        "  labels:",
        '    {{- include "tiny-harness.labels" . | nindent 4 }}',
        "spec:",
        '  policyName: {{ include "tiny-harness.clusterName" . }}-identity',
        "  validationActions:",
        "  - Deny",
        "  {{- if .Values.watchNamespace }}",
        "  matchResources:",
        "    namespaceSelector:",
        "      matchLabels:",
        "        kubernetes.io/metadata.name: {{ .Values.watchNamespace }}",
        "  {{- end }}",
        "{{- end }}",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--write", action="store_true", help="write the chart's policy template")
    args = parser.parse_args(argv)
    text = chart_template()
    if args.write:
        CHART_TEMPLATE.write_text(text)
        return 0
    if CHART_TEMPLATE.read_text() != text:
        rel = CHART_TEMPLATE.relative_to(REPO_ROOT)
        print(f"stale: {rel} (run python -m tiny_harness.kube.admission --write)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
