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
- the metadata readers act on is the harness's: owner references (the garbage collector
  deletes an object with its owner), finalizers (they keep an object from being deleted), and
  every label and annotation under the harness's prefix (the shard a task is worked in, whose a
  message or a task is for the quotas, the bytes a message carries, a task's context and
  lifecycle). Nobody else changes them on an update; on a create, a task carries none of them
  but a sender label naming its writer, and a message only what ``kubectl harness send``
  writes as its user (one owner reference, to the task its ``spec.task`` names, the task and
  shard labels, a sender label naming its writer), never a bytes annotation: the operator
  measures such a message and writes it (``operator/measurer.py``);
- a deletion, checked by a policy of its own (on DELETE there is only ``oldObject``): a task
  is deleted by its assignee, reporter or admin (the garbage collector then deletes its
  messages and records), a message by its sender, a turn record by nobody but the harness.

The harness's own identities are exempt where they must be: the operator's ServiceAccount from
every rule (it writes children, records and status for every task), the gateway's from the two
that bind a participant (it speaks for the participants it authenticated, and creates children
for those who may end the parent), and ``system:masters`` (cluster administrators, who could
remove the policy anyway) for break-glass work and for tests that set up conversations, and
the control plane's garbage collector and namespace controller (:data:`CONTROL_PLANE_USERS`),
which remove owner references and finalizers as they collect what was deleted. Status
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

from tiny_harness.core.task import ENDING_ROLES
from tiny_harness.kube.authority_rules import SPEC_RULES
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.kube.names import (
    API_VERSION,
    GROUP,
    KIND,
    MESSAGE_PLURAL,
    PLURAL,
    PREFIX,
    SENDER_LABEL,
    SHARD_LABEL,
    TASK_LABEL,
    TURN_PLURAL,
)

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
# -- metadata that gives power ---------------------------------------------------------------
#
# Readers act on an object's owner references (the garbage collector deletes an object with its
# owner; a child is a task's by the owner reference to its uid), its finalizers (they keep it
# from being deleted) and every label and annotation under the harness's prefix (the shard a
# task is worked in, whose a message or task is for the quotas, the bytes a message carries, a
# task's context and lifecycle). So only the harness writes them: anyone else changes none of
# them on an update, and creates an object with only what ``kubectl harness send`` writes as
# its user (a message's owner reference to the task its ``spec.task`` names, the task label and
# the task's shard label, and a sender label that is the writer's own name).
_OURS: Final = f"request.resource.resource in ['{MESSAGE_PLURAL}', '{PLURAL}']"
_MESSAGES: Final = f"request.resource.resource == '{MESSAGE_PLURAL}'"
_KEY: Final = f"k.startsWith('{PREFIX}/')"
#: The harness's labels a participant's own message may carry when created, besides a sender
#: label naming the writer: what ``kube/messages.py`` copies from the task it is sent to.
PARTICIPANT_MESSAGE_LABELS: Final = (TASK_LABEL, SHARD_LABEL)


def _meta(obj: str, field: str) -> str:
    return f"{obj}.metadata.{field}"


def _kept(field: str) -> str:
    """CEL: every harness key of ``metadata.<field>`` (a map) is as it was, none added or
    removed."""
    new, old = _meta("object", field), _meta("oldObject", field)
    return (
        f"(!has({new}) || {new}.all(k, !{_KEY} || "
        f"(has({old}) && k in {old} && {old}[k] == {new}[k]))) && "
        f"(!has({old}) || {old}.all(k, !{_KEY} || (has({new}) && k in {new})))"
    )


def _changed(field: str) -> str:
    """CEL: the harness keys of ``metadata.<field>`` an update adds, changes or removes, as one
    string (for the refusal)."""
    new, old = _meta("object", field), _meta("oldObject", field)
    return (
        f"((has({new}) ? {new}.filter(k, {_KEY} && "
        f"!(has({old}) && k in {old} && {old}[k] == {new}[k])) : []) + "
        f"(has({old}) ? {old}.filter(k, {_KEY} && !(has({new}) && k in {new})) : []))"
        ".join(', ')"
    )


def _same_list(field: str) -> str:
    """CEL: ``metadata.<field>`` (a list) is as it was."""
    new, old = _meta("object", field), _meta("oldObject", field)
    return f"(has({new}) ? (has({old}) && {new} == {old}) : !has({old}))"


_WRITER_LABEL: Final = (
    f"(k == '{SENDER_LABEL}' && object.metadata.labels[k] == {_USER}) || "
    f"({_MESSAGES} && k in [{', '.join(repr(k) for k in PARTICIPANT_MESSAGE_LABELS)}])"
)
_OWNER: Final = (
    f"r.apiVersion == '{API_VERSION}' && r.kind == '{KIND}' && r.name == object.spec.task && "
    "!(has(r.controller) && r.controller) && !(has(r.blockOwnerDeletion) && r.blockOwnerDeletion)"
)
_UPDATE: Final = "request.operation == 'UPDATE'"
_NAMED: Final = "request.resource.resource + ' ' + object.metadata.name"

#: Owner references: unchanged on an update; on a create, none on a task, and on a message at
#: most the one ``kubectl harness send`` writes, to the task its ``spec.task`` names.
OWNERS_RULE: Final = (
    f"{_GATEWAY} || !({_OURS}) || ({_UPDATE} ? {_same_list('ownerReferences')} : "
    f"(!has(object.metadata.ownerReferences) || ({_MESSAGES} && "
    f"size(object.metadata.ownerReferences) == 1 && "
    f"object.metadata.ownerReferences.all(r, {_OWNER}))))"
)
OWNERS_MESSAGE: Final = (
    f"{_UPDATE} ? 'metadata.ownerReferences of ' + {_NAMED} + ' are set by the harness alone "
    "(the garbage collector deletes an object with its owner), and ' + "
    f"{_USER} + ' may not change them: put them back as they were' : "
    "'metadata.ownerReferences are set by the harness alone (the garbage collector deletes an "
    "object with its owner): a task is created with none, and a message with at most one, to "
    "the HarnessTask its spec.task names, as kubectl harness send writes it; remove the others'"
)
#: Finalizers: the harness adds none; nobody else adds, removes or changes one.
FINALIZERS_RULE: Final = (
    f"{_GATEWAY} || !({_OURS}) || "
    f"({_UPDATE} ? {_same_list('finalizers')} : !has(object.metadata.finalizers))"
)
FINALIZERS_MESSAGE: Final = (
    f"'metadata.finalizers of ' + {_NAMED} + ' are written by the harness alone (a finalizer "
    f"keeps an object from being deleted), and ' + {_USER} + ' may not add, remove or change "
    "one: remove them'"
)
#: The harness's labels: unchanged on an update; on a create only the writer's own sender
#: label, and on a message the labels it copies from its task.
LABELS_RULE: Final = (
    f"{_GATEWAY} || !({_OURS}) || ({_UPDATE} ? {_kept('labels')} : "
    f"(!has(object.metadata.labels) || object.metadata.labels.all(k, !{_KEY} || {_WRITER_LABEL})))"
)
LABELS_MESSAGE: Final = (
    f"{_UPDATE} ? 'the labels ' + {_changed('labels')} + ' of ' + {_NAMED} + ' are written by "
    f"the harness alone (it shards its work and counts quotas by them), and ' + {_USER} + ' may "
    "not change them: put them back as they were' : "
    "'the labels ' + object.metadata.labels.filter(k, "
    f"{_KEY} && !({_WRITER_LABEL})).join(', ') + ' are written by the harness alone (it shards "
    "its work and counts quotas by them): remove them; a sender label may name only its "
    f"writer, ' + {_USER}"
)
#: The harness's annotations (a message's bytes, a task's context, lifecycle, first message):
#: unchanged on an update, none on a create.
ANNOTATIONS_RULE: Final = (
    f"{_GATEWAY} || !({_OURS}) || ({_UPDATE} ? {_kept('annotations')} : "
    f"(!has(object.metadata.annotations) || object.metadata.annotations.all(k, !{_KEY})))"
)
ANNOTATIONS_MESSAGE: Final = (
    f"{_UPDATE} ? 'the annotations ' + {_changed('annotations')} + ' of ' + {_NAMED} + ' are "
    f"written by the harness alone (the bytes a message carries, the context and lifecycle "
    f"of a task), and ' + {_USER} + ' may not change them: put them back as they were' : "
    "'the annotations ' + object.metadata.annotations.filter(k, "
    f"{_KEY}).join(', ') + ' are written by the harness alone (the bytes a message carries, the "
    "context and lifecycle of a task; the operator measures a message itself): remove them'"
)
#: Who is not checked, as a CEL expression over ``request.userInfo``.
ADMINS: Final = "'system:masters' in request.userInfo.groups"
#: The control plane's own controllers, which remove owner references and finalizers as they
#: collect garbage (``--use-service-account-credentials`` or not) and delete a namespace's
#: objects with it: not checked either.
CONTROL_PLANE_USERS: Final = (
    "system:kube-controller-manager",
    "system:serviceaccount:kube-system:generic-garbage-collector",
    "system:serviceaccount:kube-system:namespace-controller",
)
#: The policy the local control plane applies.
LOCAL_POLICY: Final = "tiny-harness-identity"
#: The local control plane's harness identities: the ServiceAccounts the tests and ``make run``
#: give the gateway and the operator, in any namespace.
LOCAL_GATEWAY: Final = f"{_USER}.matches('^system:serviceaccount:[^:]+:tiny-harness-gateway$')"
LOCAL_OPERATOR: Final = f"{_USER}.matches('^system:serviceaccount:[^:]+:tiny-harness-operator$')"

#: Rules: each a CEL expression and what the writer is told when it is false.
Rules = tuple[tuple[str, str], ...]
#: Each rule and what the writer is told, in the order the API server checks them.
RULES: Final[Rules] = (
    (SENDER_RULE, SENDER_MESSAGE),
    (CREATOR_RULE, CREATOR_MESSAGE),
    (PARENT_RULE, PARENT_MESSAGE),
    *SPEC_RULES,
    (TURN_RULE, TURN_MESSAGE),
    (OWNERS_RULE, OWNERS_MESSAGE),
    (FINALIZERS_RULE, FINALIZERS_MESSAGE),
    (LABELS_RULE, LABELS_MESSAGE),
    (ANNOTATIONS_RULE, ANNOTATIONS_MESSAGE),
)


# -- deletion: a policy of its own (on DELETE there is no ``object``, only ``oldObject``) --------

#: Who may delete a task: who may end it (complete or cancel), as it stands.
_ENDING: Final = "[" + ", ".join(f"'{r.value}'" for r in sorted(ENDING_ROLES)) + "]"

#: A task is deleted by its assignee, reporter or admin (as it stands), or by the harness: the
#: garbage collector then deletes its messages and records with it.
TASK_DELETE_RULE: Final = (
    f"request.resource.resource != '{PLURAL}' || (has(oldObject.spec.participants) && "
    f"oldObject.spec.participants.exists(p, p.id == {_USER} && p.role in {_ENDING}))"
)
TASK_DELETE_MESSAGE: Final = (
    f"'task ' + oldObject.metadata.name + ' is deleted by its assignee, reporter or admin "
    f"alone (its messages and turn records go with it), and ' + {_USER} + ' is none of them: "
    "ask one of them'"
)
#: A message is deleted by its sender (the writer the policy bound it to), or by the harness.
MESSAGE_DELETE_RULE: Final = (
    f"request.resource.resource != '{MESSAGE_PLURAL}' || oldObject.spec.sender == {_USER}"
)
MESSAGE_DELETE_MESSAGE: Final = (
    "'message ' + oldObject.metadata.name + ' was sent by ' + oldObject.spec.sender + ', who "
    f"alone deletes it (or the harness, with its task), and not ' + {_USER}"
)
#: The turn journal goes with its task, deleted by the harness alone.
TURN_DELETE_RULE: Final = TURN_RULE
TURN_DELETE_MESSAGE: Final = (
    "'HarnessTurn records are the journal the operator keeps of each turn, and ' + "
    f"{_USER} + ' may not delete one: they are deleted with their task'"
)
#: The deletion policy's rules, in the order the API server checks them.
DELETE_RULES: Final[Rules] = (
    (TASK_DELETE_RULE, TASK_DELETE_MESSAGE),
    (MESSAGE_DELETE_RULE, MESSAGE_DELETE_MESSAGE),
    (TURN_DELETE_RULE, TURN_DELETE_MESSAGE),
)
#: The identity policy's parts: a name suffix, the operations it matches, and its rules.
PARTS: Final = (("", ("CREATE", "UPDATE"), RULES), ("-deletion", ("DELETE",), DELETE_RULES))
_RESOURCES: Final = (MESSAGE_PLURAL, PLURAL, TURN_PLURAL)


def exempt_users(usernames: list[str]) -> str:
    """A CEL test for these exact usernames."""
    quoted = ", ".join(f"'{u}'" for u in usernames)
    return f"{_USER} in [{quoted}]"


_NOT_CONTROL_PLANE: Final = f"!({exempt_users(list(CONTROL_PLANE_USERS))})"


def sender_policy(
    name: str, *, gateway: str, operator: str, namespace: str | None = None
) -> list[dict[str, Any]]:
    """The policies, then their bindings (writes, then deletions: :data:`PARTS`), in the order
    helm installs them. ``gateway`` and ``operator`` are CEL tests of the harness's own
    identities; ``namespace`` scopes the bindings to one namespace (the chart's namespaced
    mode)."""
    binding_resources: dict[str, Any] = {}
    if namespace is not None:
        binding_resources = {
            "namespaceSelector": {
                "matchLabels": {"kubernetes.io/metadata.name": namespace},
            }
        }
    policies: list[dict[str, Any]] = []
    bindings: list[dict[str, Any]] = []
    for suffix, operations, rules in PARTS:
        policy = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name + suffix},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [GROUP],
                            "apiVersions": ["*"],
                            "operations": list(operations),
                            "resources": list(_RESOURCES),
                        }
                    ]
                },
                "matchConditions": [
                    {"name": "not-an-administrator", "expression": f"!({ADMINS})"},
                    {"name": "not-the-control-plane", "expression": _NOT_CONTROL_PLANE},
                    {"name": "not-the-operator", "expression": f"!({operator})"},
                ],
                "variables": [{"name": "gateway", "expression": gateway}],
                "validations": [
                    {"expression": rule, "messageExpression": message, "reason": "Forbidden"}
                    for rule, message in rules
                ],
            },
        }
        binding = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name + suffix},
            "spec": {
                "policyName": name + suffix,
                "validationActions": ["Deny"],
                **({"matchResources": binding_resources} if binding_resources else {}),
            },
        }
        policies.append(policy)
        bindings.append(binding)
    return policies + bindings


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
    lines = [
        "{{- /*",
        "Generated from tiny_harness/kube/admission.py by",
        "`python -m tiny_harness.kube.admission --write`: edit the rules there. The identity",
        "policy binds every write a participant can make to the user who makes it, and its",
        "deletion part every deletion (see that module and docs/design/threat-model.md). The",
        "release's operator ServiceAccount is exempt from every rule, its gateway ServiceAccount",
        "from the ones that bind a participant, and so are system:masters and the control",
        "plane's garbage collector and namespace controller. In namespaced mode the bindings",
        "cover watchNamespace only.",
        "*/}}",
        "{{- if .Values.admissionPolicy.enabled }}",
    ]
    for index, (suffix, operations, rules) in enumerate(PARTS):
        if index:
            lines.append("---")
        lines += _chart_part(suffix, operations, rules)
    lines.append("{{- end }}")
    return "\n".join(lines) + "\n"


def _chart_part(suffix: str, operations: tuple[str, ...], rules: Rules) -> list[str]:
    """One policy and its binding, as chart template lines."""
    q = json.dumps
    name = '{{ include "tiny-harness.clusterName" . }}-identity' + suffix
    lines = [
        "apiVersion: admissionregistration.k8s.io/v1",
        "kind: ValidatingAdmissionPolicy",
        "metadata:",
        f"  name: {name}",
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
        *(f"      - {o}" for o in operations),
        "      resources:",
        *(f"      - {r}" for r in _RESOURCES),
        "  matchConditions:",
        "  - name: not-an-administrator",
        f"    expression: {q(f'!({ADMINS})')}",
        "  - name: not-the-control-plane",
        f"    expression: {q(_NOT_CONTROL_PLANE)}",
        "  - name: not-the-operator",
        f"    expression: {_sa_test('operatorServiceAccountName', negate=True)}",
        "  variables:",
        "  - name: gateway",
        f"    expression: {_sa_test('gatewayServiceAccountName')}",
        "  validations:",
    ]
    for rule, message in rules:
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
        f"  name: {name}",
        "  labels:",
        '    {{- include "tiny-harness.labels" . | nindent 4 }}',
        "spec:",
        f"  policyName: {name}",
        "  validationActions:",
        "  - Deny",
        "  {{- if .Values.watchNamespace }}",
        "  matchResources:",
        "    namespaceSelector:",
        "      matchLabels:",
        "        kubernetes.io/metadata.name: {{ .Values.watchNamespace }}",
        "  {{- end }}",
    ]
    return lines


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
