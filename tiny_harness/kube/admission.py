"""Identity the API server enforces: a ``ValidatingAdmissionPolicy`` that binds a message's
``spec.sender`` to the user who writes it, and a task's creator to its participants.

Without it, anyone who may create a ``HarnessMessage`` may speak as anyone: the operator checks
that the sender is a participant, but it cannot know who really wrote the object. With it:

- a ``HarnessMessage`` written by a user must name that user as ``spec.sender`` (their
  Kubernetes username is their participant id, as ``kubectl harness`` assumes);
- a ``HarnessTask`` a user creates must name that user among its participants (the gateway adds
  a creator it authenticated as a reporter; a kubectl user is told to add themselves);
- the lifecycle annotation a child is created with is the operator's: nobody else sets or
  changes it;
- the harness's own identities are exempt: the gateway's ServiceAccount speaks for the
  participants it authenticated, the operator's for parent tasks and for itself, and
  ``system:masters`` (cluster administrators, who could remove the policy anyway) for break-glass
  work and for tests that set up conversations.

The rules are defined here once. The local control plane applies :func:`local_policy`; the
chart's ``admission-policy.yaml`` renders the same expressions with its release's
ServiceAccounts, and a chart test compares the two.
"""

from __future__ import annotations

from typing import Any, Final

from tiny_harness.kube.names import GROUP, LIFECYCLE_ANNOTATION, MESSAGE_PLURAL, PLURAL

#: What a message must say about its writer.
SENDER_RULE: Final = (
    f"request.resource.resource != '{MESSAGE_PLURAL}' || "
    "object.spec.sender == request.userInfo.username"
)
SENDER_MESSAGE: Final = (
    "'spec.sender is ' + object.spec.sender + ', but this message is written by ' + "
    "request.userInfo.username + ': a message speaks for the user who writes it; send it as "
    "yourself (kubectl harness send), or through the A2A gateway'"
)
#: What a task must say about its creator.
CREATOR_RULE: Final = (
    f"request.resource.resource != '{PLURAL}' || request.operation != 'CREATE' || "
    "(has(object.spec.participants) && "
    "object.spec.participants.exists(p, p.id == request.userInfo.username))"
)
CREATOR_MESSAGE: Final = (
    "'spec.participants does not name ' + request.userInfo.username + ', who creates the "
    "task: add yourself (as a reporter, to follow a task you hand to others), or the task "
    "would be hidden from you'"
)
#: The lifecycle a child is created with is the harness's to write (names.LIFECYCLE_ANNOTATION):
#: anyone else may not set it, nor change it on an update.
_ANNOTATIONS: Final = "object.metadata.annotations"
_OLD: Final = "oldObject.metadata.annotations"
LIFECYCLE_RULE: Final = (
    f"request.resource.resource != '{PLURAL}' || !has({_ANNOTATIONS}) || "
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
LOCAL_HARNESS: Final = (
    "request.userInfo.username.matches("
    "'^system:serviceaccount:[^:]+:tiny-harness-(gateway|operator)$')"
)


def exempt_users(usernames: list[str]) -> str:
    """A CEL test for these exact usernames."""
    quoted = ", ".join(f"'{u}'" for u in usernames)
    return f"request.userInfo.username in [{quoted}]"


def sender_policy(name: str, exempt: str, namespace: str | None = None) -> list[dict[str, Any]]:
    """The policy and its binding. ``exempt`` is a CEL test of the harness's own identities;
    ``namespace`` scopes the binding to one namespace (the chart's namespaced mode)."""
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
                        "resources": [MESSAGE_PLURAL, PLURAL],
                    }
                ]
            },
            "matchConditions": [
                {"name": "not-an-administrator", "expression": f"!({ADMINS})"},
                {"name": "not-the-harness", "expression": f"!({exempt})"},
            ],
            "validations": [
                {
                    "expression": SENDER_RULE,
                    "messageExpression": SENDER_MESSAGE,
                    "reason": "Forbidden",
                },
                {
                    "expression": CREATOR_RULE,
                    "messageExpression": CREATOR_MESSAGE,
                    "reason": "Forbidden",
                },
                {
                    "expression": LIFECYCLE_RULE,
                    "messageExpression": LIFECYCLE_MESSAGE,
                    "reason": "Forbidden",
                },
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
    return sender_policy(LOCAL_POLICY, LOCAL_HARNESS)
