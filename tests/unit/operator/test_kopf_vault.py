"""kopf's private credentials vault (operator/kopf_vault.py): still where, and what, the operator
expects, or this fails naming the kopf release that changed it; and reached from that one
module alone."""

from __future__ import annotations

import ast
import inspect
from importlib.metadata import version
from pathlib import Path

import kopf
import pytest

from tiny_harness.operator import kopf_vault
from tiny_harness.operator.kopf_vault import KopfVaultMoved, check, new_vault

PACKAGE = Path(kopf_vault.__file__).parents[1]


def test_the_installed_kopf_takes_our_vault_as_the_operator_uses_it() -> None:
    check()  # raises KopfVaultMoved, naming kopf's version, on a release that moved it
    annotation = str(inspect.signature(kopf.spawn_tasks).parameters["vault"].annotation)
    assert type(new_vault()).__name__ in annotation


async def test_a_new_vault_is_empty_and_closes() -> None:
    vault = new_vault()
    assert vault.is_empty()
    await vault.close()


def test_a_kopf_whose_spawn_tasks_takes_no_vault_fails_naming_its_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def spawn_tasks(**options: object) -> None: ...

    monkeypatch.setattr(kopf, "spawn_tasks", spawn_tasks)
    with pytest.raises(KopfVaultMoved) as raised:
        check()
    message = str(raised.value)
    assert message.startswith(f"kopf {version('kopf')}: kopf.spawn_tasks() no longer takes")
    assert "tiny_harness/operator/kopf_vault.py" in message
    assert kopf_vault.PRIVATE_PATH in message


def test_no_other_module_imports_kopfs_credentials_internals() -> None:
    private = kopf_vault.PRIVATE_PATH.rsplit(".", 1)[0]
    importers = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if private in names:
                importers.add(path.relative_to(PACKAGE.parent).as_posix())
    assert importers == {"tiny_harness/operator/kopf_vault.py"}
