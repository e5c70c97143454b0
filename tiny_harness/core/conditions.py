"""Status conditions, as Kubernetes' API conventions define them (``metav1.Condition``).

Every kind the operator reports on (``HarnessTask``, ``HarnessAgent``, ``HarnessToolServer``)
says what holds of an object in ``status.conditions``: one condition per ``type``, each with a
``status`` (True, False, Unknown), a ``reason`` a program can match (CamelCase), a
``message`` a person reads, and the ``lastTransitionTime`` at which its status last changed;
``observedGeneration`` says which spec it judged. The model here is that type, field for field
with metav1's validation, and :data:`Conditions` is the list, declared a map keyed by
``type`` (``x-kubernetes-list-type: map``), so the API server refuses two of one type and a
server-side apply merges by type; the CRDs are generated from it.

:func:`set_condition` is how a condition is written, as apimachinery's
``meta.SetStatusCondition``: a new one is added; an existing one takes the new reason, message
and generation, and its transition time changes only when its status does, so the time always
says when the condition last turned, never when it was last written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Final, Literal

from pydantic import Field

from tiny_harness.core.vocabulary import Model

#: metav1.Condition's rules for a condition's type (a qualified name) and reason (CamelCase).
TYPE_PATTERN: Final = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
REASON_PATTERN: Final = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
MESSAGE_MAX: Final = 32768

ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(Model):
    """A Kubernetes status condition: metav1.Condition, its fields and their rules."""

    type: str = Field(
        max_length=316,
        pattern=TYPE_PATTERN,
        description="The aspect it describes, one condition per type (Accepted, Error, Ready).",
    )
    status: ConditionStatus = Field(description="True, False or Unknown.")
    reason: str = Field(
        min_length=1,
        max_length=1024,
        pattern=REASON_PATTERN,
        description="Why, in CamelCase, for programs to match.",
    )
    message: str = Field(max_length=MESSAGE_MAX, description="Why, for people; may be empty.")
    last_transition_time: str = Field(
        json_schema_extra={"format": "date-time"},
        description="When the status last changed (RFC 3339).",
    )
    observed_generation: int | None = Field(
        default=None, ge=0, description="The spec generation the condition was set for."
    )


#: A status's conditions: a list keyed by ``type``, as the API conventions say.
Conditions = Annotated[
    tuple[Condition, ...],
    Field(
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
        }
    ),
]


def transitioned(old: Condition | None, new: Condition) -> Condition:
    """``new``, keeping ``old``'s transition time when its status is the same."""
    if old is None or old.status != new.status:
        return new
    return new.model_copy(update={"last_transition_time": old.last_transition_time})


def set_condition(conditions: Iterable[Condition], new: Condition) -> tuple[Condition, ...]:
    """``conditions`` with ``new`` set by its type: in the place of the one it replaces (its
    transition time kept when the status is unchanged), or added at the end."""
    out: list[Condition] = []
    placed = False
    for condition in conditions:
        if condition.type == new.type:
            if not placed:
                out.append(transitioned(condition, new))
                placed = True
            continue
        out.append(condition)
    if not placed:
        out.append(new)
    return tuple(out)


def find_condition(conditions: Iterable[Condition], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)
