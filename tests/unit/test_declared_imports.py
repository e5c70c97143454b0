"""Every third-party package the code imports is declared in pyproject.toml.

A package that is imported but only installed because another dependency brings it along
breaks the day that dependency drops it or moves it a major version on, and no bound of ours
stands in the way. So every import in ``tiny_harness/`` (each ``import`` and ``from ... import``,
in a function or under ``TYPE_CHECKING`` too) is mapped to the distribution that installs it
(``importlib.metadata``; for a namespace package such as ``opentelemetry``, the one whose files
hold the module) and must be named in ``[project] dependencies``; the tests' imports may also
come from the ``dev`` extra.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import sys
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Final

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO: Final = Path(__file__).resolve().parents[2]
PROJECT: Final = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
#: Our own top-level packages: the code under test and the tests themselves.
OWN: Final = frozenset({"tiny_harness", "tests"})


def declared(*extras: str) -> frozenset[str]:
    """The distributions pyproject.toml names in its dependencies (and the given extras)."""
    specs = [*PROJECT["dependencies"]]
    for extra in extras:
        specs += PROJECT["optional-dependencies"][extra]
    return frozenset(canonicalize_name(Requirement(s).name) for s in specs)


def imported(path: Path) -> Iterator[tuple[int, str]]:
    """(line, dotted module) for each absolute import in a file; for ``from m import n``, both
    ``m.n`` (n may be a module) and ``m``."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def third_party(module: str, path: Path) -> bool:
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top in OWN or top == "__future__":
        return False
    # A test's own sibling module (tests/unit/models/adapter_kit.py, imported by its name).
    return not ((path.parent / f"{top}.py").exists() or (path.parent / top).is_dir())


@cache
def top_level_providers() -> dict[str, list[str]]:
    return metadata.packages_distributions()


@cache
def files_of(distribution: str) -> frozenset[str]:
    return frozenset(f.as_posix() for f in metadata.files(distribution) or ())


@cache
def provider(module: str) -> str | None:
    """The distribution that installs ``module`` (its longest dotted prefix that one does)."""
    parts = module.split(".")
    candidates = top_level_providers().get(parts[0], [])
    if len(set(candidates)) <= 1:
        return canonicalize_name(candidates[0]) if candidates else None
    # A namespace package: the distribution whose files hold the module, or its package.
    for end in range(len(parts), 0, -1):
        stem = "/".join(parts[:end])
        wanted = {f"{stem}.py", f"{stem}/__init__.py"}
        owners = {c for c in candidates if wanted & files_of(c)}
        if len(owners) == 1:
            return canonicalize_name(owners.pop())
    return None


def undeclared(root: Path, allowed: frozenset[str]) -> list[str]:
    """One line per distribution, not ``allowed``, that an import under ``root`` comes from."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for line, module in imported(path):
            if not third_party(module, path):
                continue
            # ``from a.b import c``: c is a module (a.b.c) or a name in a.b; ask for both.
            distribution = provider(module) or provider(module.rpartition(".")[0] or module)
            if distribution not in allowed:
                where = f"{path.relative_to(REPO)}:{line}"
                found.setdefault(distribution or f"{module} (not installed)", []).append(where)
    return [
        f"{name}: imported at {places[0]}" + (f" and {len(places) - 1} more" if places[1:] else "")
        for name, places in sorted(found.items())
    ]


def test_every_package_tiny_harness_imports_is_a_declared_runtime_dependency() -> None:
    missing = undeclared(REPO / "tiny_harness", declared())
    assert not missing, (
        "add each distribution to [project] dependencies, bounded below by the version in"
        " requirements.lock and above by its next major, then `make lock`:\n" + "\n".join(missing)
    )


def test_every_package_the_tests_import_is_declared_for_them() -> None:
    missing = undeclared(REPO / "tests", declared("dev"))
    assert not missing, (
        "add each distribution to [project.optional-dependencies] dev (or, if the package"
        " itself imports it, to [project] dependencies), then `make lock`:\n" + "\n".join(missing)
    )


@pytest.mark.parametrize(
    ("module", "distribution"),
    [
        ("yaml", "pyyaml"),
        ("opentelemetry.sdk.trace.export", "opentelemetry-sdk"),
        ("opentelemetry.trace", "opentelemetry-api"),
        ("opentelemetry.proto.common.v1.common_pb2", "opentelemetry-proto"),
        ("opentelemetry.semconv.attributes", "opentelemetry-semantic-conventions"),
    ],
)
def test_an_import_is_traced_to_the_distribution_that_installs_it(
    module: str, distribution: str
) -> None:
    assert provider(module) == distribution
