"""The vocabulary every task model shares: the base model, short texts, bounds and roles.

Apart from :mod:`tiny_harness.core.task` so that a model the task holds (an approval policy, say)
can be defined in a module of its own without importing the task.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

NAME_MAX: Final = 253
#: The longest time-to-live, deadline or input timeout a task may ask for: one year.
TTL_MAX: Final = 365 * 24 * 3600
TEXT_MAX: Final = 65536


class Role(StrEnum):
    ASSIGNEE = "assignee"
    REPORTER = "reporter"
    WATCHER = "watcher"
    ADMIN = "admin"


#: Roles that may complete or cancel a task; a watcher only follows it.
ENDING_ROLES: Final = frozenset({Role.ASSIGNEE, Role.REPORTER, Role.ADMIN})


class Model(BaseModel):
    """Base of the task models: frozen, strict about unknown keys, camelCase by alias."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        use_enum_values=False,
    )


ShortText = Annotated[str, Field(min_length=1, max_length=NAME_MAX)]
