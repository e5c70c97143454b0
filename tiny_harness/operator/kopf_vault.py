"""kopf's credentials vault, the one private kopf name the operator depends on, reached here.

:mod:`.kopf_shards` runs each kopf instance through ``kopf.spawn_tasks(vault=...)`` and closes
the instance's API sessions itself when the instance ends (kopf's own cleanup would, but its
root task is cancelled with the others). That takes a vault of its own, and kopf has no public
name for the class: ``kopf.spawn_tasks`` annotates its ``vault`` parameter with
``kopf._cogs.structs.credentials.Vault``, which ``kopf/__init__.py`` does not re-export.

So the private path is imported here and nowhere else. A kopf release that moves it fails the
import with :class:`KopfVaultMoved`, naming the release, rather than with a bare
``ImportError`` at the operator's start; :func:`check`, run by this module's unit test, also
fails on a release that still has the class but no longer takes it, or no longer closes it.
"""

from __future__ import annotations

import inspect
from importlib.metadata import version
from typing import Final

import kopf

#: Where kopf keeps the class, for the message that names a release that moved it.
PRIVATE_PATH: Final = "kopf._cogs.structs.credentials.Vault"


class KopfVaultMoved(RuntimeError):
    """The installed kopf keeps its credentials vault elsewhere, or in another form."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"kopf {version('kopf')}: {what}; tiny_harness/operator/kopf_vault.py reaches kopf's"
            f" private {PRIVATE_PATH} for kopf.spawn_tasks(vault=...): point it at the class"
            " this release uses (or its public name, if it has one now)"
        )


try:
    from kopf._cogs.structs.credentials import Vault
except ImportError as exc:  # pragma: no cover - only on a kopf release that moved it
    raise KopfVaultMoved(f"{PRIVATE_PATH} cannot be imported ({exc})") from exc


def new_vault() -> Vault:
    """An empty vault for one kopf instance; the caller closes it (``await vault.close()``)."""
    return Vault()


def check() -> None:
    """Raise :class:`KopfVaultMoved` unless kopf still takes this vault as it did."""
    parameter = inspect.signature(kopf.spawn_tasks).parameters.get("vault")
    if parameter is None:
        raise KopfVaultMoved("kopf.spawn_tasks() no longer takes a vault= argument")
    if "Vault" not in str(parameter.annotation):
        raise KopfVaultMoved(
            f"kopf.spawn_tasks(vault=...) now takes {parameter.annotation!s}, not a Vault"
        )
    if not inspect.iscoroutinefunction(getattr(Vault, "close", None)):
        raise KopfVaultMoved("its Vault no longer has an async close()")
