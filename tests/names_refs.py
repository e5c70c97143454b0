"""What the docs and the docstrings name, and whether each name exists.

Two kinds of text name the code. Markdown (``docs/``, the READMEs) names it in code spans and
links: a file path (``core/loop.py``, ``tiny_harness/kube/``, ``tests/unit/core/test_decide.py``),
a path with a name (``kube/client.py::BoundedApiClient``, ``core/tracing.TracedAdapter``), a
dotted name (``tiny_harness.kube.watching.follow_listings``, ``status_writer.write``,
``TaskView.version``), a test's name (``test_...``) or a configuration key
(``operator.cache_bytes``; a chart value such as ``networkPolicy.enabled``). The package's own
source names it in Sphinx roles (``:func:`.participant_view.conversation```,
``:class:`~tiny_harness.devcluster.LocalCluster```) and in the paths and ``tiny_harness.``
names written in its docstrings and comments.

Prose is not code: a bare word in a code span (``HarnessTask``, ``spec.parts``) is only checked
when it starts the way a name of ours does (the package, one of its packages or modules, one of
its classes, a section of the settings or of the chart's values), so the check finds drift
without a list of exceptions. Another library's name is written with the library's
(``asyncio.Condition.notify_all``) and is not ours to check.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml

from tests.names_index import PACKAGE, ROOT, PackageIndex, module_name

DOCS = ROOT / "docs"
MAP = DOCS / "design" / "README.md"
READMES = (
    ROOT / "README.md",
    ROOT / "tests" / "README.md",
    ROOT / "charts" / "tiny-harness" / "README.md",
)
SETTINGS = f"{PACKAGE}.core.settings.Settings"
CHART_VALUES = ROOT / "charts" / "tiny-harness" / "values.yaml"

FILE_SUFFIXES = frozenset(
    {
        ".py", ".md", ".ts", ".tsx", ".css", ".json", ".yaml", ".yml", ".sh", ".go", ".toml",
        ".txt", ".html", ".js", ".mjs", ".cfg", ".ini", ".lock", ".mod", ".sum",
    }
)  # fmt: skip
"""A path ending in one of these (after a stem) names a file."""

SOURCE_SUFFIXES = frozenset({".py", ".md", ".ts", ".tsx", ".sh", ".go"})
"""A bare file name (no folder) is ours only with one of these: ``figures.json`` or
``config.toml`` in prose is the name of someone's file, ``fanout.py`` is a module."""

REPO_DIRS = ("tiny_harness", "tests", "docs", "web", "hack", "crds", "charts", "examples")
"""The repository's own top-level folders."""

SKIPPED = frozenset({".venv", "node_modules", "__pycache__", ".git", "dist", "build"})

Kind = Literal["file", "dotted", "test", "link", "role"]

HINTS: dict[Kind, str] = {
    "file": "no such file: write the path it has now, or drop it",
    "dotted": (
        "no module, class, function, setting or chart value of that name: write the name it "
        "has now, or drop it (another library's name: write it with the library's, "
        "`asyncio.Condition`)"
    ),
    "test": "no test of that name: write the name it has now, or drop it",
    "link": "the link's target does not exist",
    "role": "no such name in the package: write the name it has now, or drop the role",
}

_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|obj|exc|const):`([^`]+)`")
_SPAN = re.compile(r"(?<!`)(`+)([^`\n]+?)\1(?!`)")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_PART = re.compile(r"^\*\*((?:`[\w/]+/`(?:, )?)+)")
"""A part of the map: a paragraph that opens with packages in bold (``**`cli/`, `tui/`:**``)."""
_ITEM = re.compile(r"^[-*] (`[\w/]+/`)")
"""A list item that opens with a package (``- `commands/` is ...``), within its part."""
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_TEST = re.compile(r"test_\w+")
_PATH = re.compile(r"(?<![\w/.~-])((?:[\w.-]+/)+[\w.*-]+/?)(?:::([\w.]+))?")
_PACKAGE_NAME = re.compile(rf"(?<![\w.`~]){PACKAGE}(?:\.\w+)+")


@dataclass(frozen=True)
class Reference:
    """One name as written and where: in markdown, with the packages whose paragraph of the
    map it is in (``task.py`` under **core/**); in the source, with its module and class."""

    where: Path
    line: int
    text: str
    kind: Kind
    packages: tuple[str, ...] = ()
    module: str = ""
    cls: str | None = None

    def location(self) -> str:
        where = self.where.relative_to(ROOT) if self.where.is_relative_to(ROOT) else self.where
        return f"{where}:{self.line}"


def _walk(folder: Path) -> Iterator[Path]:
    """Every file under ``folder``, outside installed and built ones."""
    for parent, dirs, files in os.walk(folder):
        dirs[:] = [name for name in dirs if name not in SKIPPED]
        for name in files:
            yield Path(parent, name)


def _in_mapping(mapping: object, parts: list[str]) -> bool:
    """A key path in the chart's values (an empty map takes any key: ``nodeSelector: {}``)."""
    for part in parts:
        if not isinstance(mapping, dict) or (mapping and part not in mapping):
            return False
        if not mapping:
            return True
        mapping = mapping[part]
    return True


class Names:
    """What a name may mean: the package (its index), the repository's files, the settings
    model and the chart's values."""

    def __init__(self) -> None:
        self.index = PackageIndex()

    # --- what exists ----------------------------------------------------------------------------

    @cached_property
    def basenames(self) -> dict[str, list[Path]]:
        """Every file and folder of the repository's own folders by its name, for a span that
        gives a bare file name (``fanout.py``) or starts with a folder's (``ui/Approvals.tsx``)."""
        found: dict[str, set[Path]] = {}
        for top in REPO_DIRS:
            for path in _walk(ROOT / top):
                found.setdefault(path.name, set()).add(path)
                for parent in path.relative_to(ROOT).parents:
                    found.setdefault(parent.name, set()).add(ROOT / parent)
        return {name: sorted(paths) for name, paths in found.items()}

    @cached_property
    def tests(self) -> set[str]:
        """The name of every test function and class."""
        pattern = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(test_\w+|Test\w+)", re.M)
        return {
            name
            for path in _walk(ROOT / "tests")
            if path.suffix == ".py"
            for name in pattern.findall(path.read_text(encoding="utf-8"))
        }

    @cached_property
    def ignored(self) -> tuple[str, ...]:
        """The folders git ignores by path (``tiny_harness/a2a_gateway/webui/``): what a build
        writes exists once built, and a doc may name it."""
        lines = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
        return tuple(line for line in lines if line.strip("/").count("/") and "*" not in line)

    @cached_property
    def packages(self) -> set[str]:
        """The last part of every package's name (``kube``, ``commands``)."""
        return {
            name.rsplit(".", 1)[-1]
            for name, module in self.index.modules.items()
            if module.is_package and name != PACKAGE
        }

    @cached_property
    def modules_by_basename(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for name in self.index.modules:
            found.setdefault(name.rsplit(".", 1)[-1], []).append(name)
        return found

    @cached_property
    def classes(self) -> dict[str, list[str]]:
        """Every class of the package by its simple name, fully qualified."""
        found: dict[str, list[str]] = {}
        for module in self.index.modules.values():
            for qualname in module.classes:
                name = f"{module.name}.{qualname}"
                found.setdefault(qualname.rsplit(".", 1)[-1], []).append(name)
        return found

    @cached_property
    def chart_values(self) -> dict[str, Any]:
        loaded = yaml.safe_load(CHART_VALUES.read_text(encoding="utf-8"))
        return loaded if isinstance(loaded, dict) else {}

    @cached_property
    def settings_sections(self) -> set[str]:
        module, _, cls = SETTINGS.rpartition(".")
        return set(self.index.modules[module].classes[cls].members)

    def is_ours(self, path: str) -> bool:
        """Whether a path starts in the repository (``anthropic/_data/...`` is a library's, and
        ``image/png`` a media type: a folder of ours deeper down names only files)."""
        first = path.split("/")[0]
        if first in REPO_DIRS or first in self.packages:
            return True
        return first in self.basenames and Path(path).suffix in FILE_SUFFIXES

    def dotted_is_ours(self, dotted: str) -> bool:
        """Whether a dotted span starts the way one of our names does (otherwise it is prose)."""
        head = dotted.split(".")[0]
        return (
            head == PACKAGE
            or head in self.packages
            or head in self.modules_by_basename
            or head in self.classes
            or head in self.settings_sections
            or head in self.chart_values
        )

    def folders(self, written: str, within: tuple[str, ...]) -> tuple[str, ...]:
        """The packages a part of the map (or an item within one) opens with, dotted under the
        package (``commands/`` within ``core/``: ``core.commands``); ``web/`` is none."""
        found: list[str] = []
        for folder in re.findall(r"`([\w/]+)/`", written):
            dotted = folder.replace("/", ".")
            for name in (*(f"{outer}.{dotted}" for outer in within), dotted):
                if f"{PACKAGE}.{name}" in self.index.modules:
                    found.append(name)
                    break
        return tuple(found)

    # --- where a path leads ---------------------------------------------------------------------

    def paths(self, text: str, ref: Reference) -> list[Path]:
        """The files or folders a written path may be. A bare ``x.py`` (or ``x/``) in a part of
        the map is that part's; elsewhere it is any file of that name. A path is tried from the
        repository, the package, the web UI's sources and the text's own folder; a module may go
        without its ``.py`` (``kube/watching``); a ``*`` is a glob."""
        text = text.rstrip("/")
        if "/" not in text:
            homes = [ROOT / PACKAGE / package.replace(".", "/") for package in ref.packages]
            here = [home / text for home in homes if (home / text).exists()]
            if here or (homes and Path(text).suffix == ".py"):
                return here
            return self.basenames.get(text, [])
        found: list[Path] = []
        for base in (ROOT, ROOT / PACKAGE, ROOT / "web" / "src", ROOT / "web", ref.where.parent):
            if any(char in text for char in "*?["):
                found += base.glob(text)
            else:
                found += [path for path in (base / text, base / f"{text}.py") if path.exists()]
        return found

    def module_at(self, path: Path) -> str | None:
        """The module a path of the package is (a folder: its package)."""
        if path.is_dir():
            path = path / "__init__.py"
        if path.suffix != ".py" or not path.is_file():
            return None
        try:
            path.resolve().relative_to(ROOT / PACKAGE)
        except ValueError:
            return None
        name = module_name(path.resolve())
        return name if name in self.index.modules else None

    def name_in_file(self, path: Path, name: str) -> bool:
        """``path::name``: a name in one file (a module of the package, or a test; a test's
        parameters, ``[...]``, and a ``*`` in its name are allowed)."""
        name = name.split("[")[0]
        module = self.module_at(path)
        if module is not None:
            return self.index.resolves(f"{module}.{name}")
        source = path.read_text(encoding="utf-8")
        defined = re.findall(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", source, re.M)
        return all(
            any(fnmatch.fnmatchcase(found, part) for found in defined) for part in name.split(".")
        )

    # --- what a dotted name means ---------------------------------------------------------------

    def dotted_candidates(self, dotted: str, unique: bool = False) -> list[str]:
        """The fully qualified names a dotted span may be: itself, under the package, from a
        module of that name, from a class of that name. ``unique``: only a module or class name
        that one module or class has."""
        head, _, rest = dotted.partition(".")
        modules = self.modules_by_basename.get(head, [])
        classes = self.classes.get(head, [])
        if unique:
            modules, classes = modules[:1] if len(modules) == 1 else [], []
        return [
            dotted,
            f"{PACKAGE}.{dotted}",
            *(f"{module}.{rest}" for module in modules),
            *(f"{cls}.{rest}" for cls in classes),
        ]

    def dotted_resolves(self, dotted: str) -> bool:
        """A dotted span: a name of the package's, a string it spells (a span attribute, a hook
        point), a module's name then a member of one of its classes (the way the docs speak of
        an instance: ``status_writer.write``), a settings key or a chart value."""
        if any(self.index.resolves(name) for name in self.dotted_candidates(dotted)):
            return True
        if self.index.spells(dotted) or self.index.resolves(f"{SETTINGS}.{dotted}"):
            return True
        return self._member_of_a_class_in(dotted) or _in_mapping(
            self.chart_values, dotted.split(".")
        )

    def _member_of_a_class_in(self, dotted: str) -> bool:
        module_part, _, member = dotted.rpartition(".")
        for name in (
            *self.modules_by_basename.get(module_part, []),
            f"{PACKAGE}.{module_part}",
            module_part,
        ):
            module = self.index.modules.get(name)
            if module is not None and any(
                self.index.resolves(f"{name}.{qualname}.{member}") for qualname in module.classes
            ):
                return True
        return False

    def role_resolves(self, ref: Reference) -> bool:
        """A Sphinx role's target: as code in its module (and class) would see it, imports
        included; else, as Sphinx does for a leading dot and a reader with ``grep`` does for any
        name, as the end of some name of the package's. A name that starts with the package's
        own must exist whole."""
        target = ref.text.removeprefix("~").removeprefix("!").removesuffix("()")
        if "<" in target:
            target = target[target.index("<") + 1 : target.rindex(">")]
        target = target.lstrip(".")
        if self.index.resolves_in(ref.module, ref.cls, target):
            return True
        if target.startswith(f"{PACKAGE}."):
            return False
        last = target.rsplit(".", 1)[-1]
        return any(name.endswith(f".{target}") for name in self.index.qualified_names.get(last, []))

    # --- the two questions ----------------------------------------------------------------------

    def problem(self, ref: Reference) -> str | None:
        """What is wrong with a reference (``None``: it names something that exists)."""
        if ref.kind == "role":
            found = self.role_resolves(ref)
        elif ref.kind == "dotted":
            found = self.dotted_resolves(ref.text)
        elif ref.kind == "test":
            found = ref.text in self.tests
        elif ref.kind == "link":
            found = (ref.where.parent / ref.text).exists()
        else:
            path, sep, name = ref.text.partition("::")
            if path.startswith(self.ignored):
                return None
            paths = self.paths(path, ref)
            if sep and paths:
                found = any(self.name_in_file(each, name) for each in paths if each.is_file())
                if not found:
                    return f"{path} defines no {name}: write the name it has now, or drop it"
            found = bool(paths)
        return None if found else HINTS[ref.kind]

    def modules_named(self, ref: Reference) -> set[str]:
        """The modules of the package a reference names (for the map: is every module on it?).
        A bare file name counts only where it is one module's."""
        if ref.kind == "file":
            paths = self.paths(ref.text.partition("::")[0], ref)
            if "/" not in ref.text and not ref.packages and len(paths) != 1:
                return set()
            return {module for path in paths if (module := self.module_at(path))}
        if ref.kind in ("dotted", "role"):
            named: set[str] = set()
            for name in self.dotted_candidates(ref.text.lstrip("~.!"), unique=True):
                parts = name.split(".")
                prefixes = (".".join(parts[:cut]) for cut in range(len(parts), 0, -1))
                named.add(next((p for p in prefixes if p in self.index.modules), ""))
            return named - {""}
        return set()


# --- the references themselves -------------------------------------------------------------------


def span_references(names: Names, ref: Reference) -> Iterator[Reference]:
    """What one code span names, if it names code at all (``ref`` is the span as written)."""
    span = ref.text.strip().strip("[]")
    path, sep, name = span.partition("::")
    name = name.split("[")[0]
    if not path or path.startswith(("/", "~", "-", ".")) or re.search(r"[\s<>{}'\",;:()]", path):
        return
    if "*" in path:  # a pattern (`test_*.py`) names many files, or none yet
        return
    if re.search(r"\W", name.replace(".", "").replace("*", "")):
        return
    span = f"{path}{sep}{name}"
    path = path.partition("=")[0]
    suffix = Path(path).suffix

    def kind(kind: Kind, text: str) -> Reference:
        return Reference(ref.where, ref.line, text, kind, ref.packages)

    if _TEST.fullmatch(path):
        yield kind("test", path)
    elif "/" not in path and suffix in SOURCE_SUFFIXES and Path(path).stem:
        yield kind("file", span)
    elif "/" in path and names.is_ours(path):
        last = path.split("/")[-1]
        if suffix in FILE_SUFFIXES or path.endswith("/") or not _DOTTED.fullmatch(last):
            yield kind("file", span)
        else:
            yield kind("dotted", path.replace("/", "."))
    elif path.endswith("/") and path.count("/") == 1 and path[:-1] in names.basenames:
        yield kind("file", path)
    elif suffix not in FILE_SUFFIXES and _DOTTED.fullmatch(path) and names.dotted_is_ours(path):
        yield kind("dotted", path)


def markdown_references(names: Names, doc: Path) -> Iterator[Reference]:
    """Every code span and relative link of one markdown file that names code or a file. A
    paragraph that opens with a package in bold (``**`core/`: ...**``) is that package's part of
    the map, until the next part or heading."""
    fenced = False
    part: tuple[str, ...] = ()
    item: tuple[str, ...] = ()
    blank = True
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        if match := _PART.match(line):
            part, item = names.folders(match.group(1), ()), ()
        elif line.startswith(("- ", "* ")):
            item = names.folders(match.group(1), part) if (match := _ITEM.match(line)) else ()
        elif line and blank and not line.startswith(" "):
            part, item = (), ()
        blank = not line.strip()
        for match in _SPAN.finditer(line):
            span = Reference(doc, number, match.group(2), "file", item or part)
            yield from span_references(names, span)
        for match in _LINK.finditer(line):
            target = match.group(1).split("#")[0]
            if target and not re.match(r"^[a-z]+:", target):
                yield Reference(doc, number, target, "link")


def source_references(names: Names, module: str) -> Iterator[Reference]:
    """Every Sphinx role in one module's source, with the class it is written in, and every
    path and ``tiny_harness.`` name its docstrings and comments write."""
    info = names.index.modules[module]
    for number, line in enumerate(info.source.splitlines(), start=1):
        if "/" not in line and "`" not in line and PACKAGE not in line:
            continue
        for match in _ROLE.finditer(line):
            yield Reference(
                info.path, number, match.group(1), "role", module=module, cls=info.class_at(number)
            )
        comment = line.find("#")
        in_comment = comment >= 0 and line[:comment].count('"') % 2 == 0
        if number not in info.docstring_lines and not in_comment:
            continue
        start = 0 if number in info.docstring_lines else comment
        for match in _PATH.finditer(line, start):
            path = match.group(1).rstrip(".")
            if not names.is_ours(path):
                continue
            last = path.rstrip("/").split("/")[-1]
            if Path(path).suffix not in FILE_SUFFIXES and _DOTTED.fullmatch(last):
                yield Reference(info.path, number, path.replace("/", "."), "dotted", module=module)
            else:
                text = path + (f"::{match.group(2)}" if match.group(2) else "")
                yield Reference(info.path, number, text, "file", module=module)
        for match in _PACKAGE_NAME.finditer(line, start):
            yield Reference(info.path, number, match.group(0), "dotted", module=module)


def documents() -> list[Path]:
    """The markdown that maps the code: everything under ``docs/`` and the READMEs."""
    return sorted(DOCS.rglob("*.md")) + [path for path in READMES if path.exists()]


def linked(doc: Path) -> list[Path]:
    """The markdown files one document links to."""
    targets = (match.group(1).split("#")[0] for match in _LINK.finditer(doc.read_text("utf-8")))
    return [
        (doc.parent / target).resolve()
        for target in targets
        if target.endswith(".md") and not re.match(r"^[a-z]+:", target)
    ]


def problems(names: Names, refs: Iterable[Reference]) -> list[str]:
    """Each reference that names nothing, as ``file:line: `name`: what to do``."""
    return [
        f"{ref.location()}: `{ref.text}`: {why}"
        for ref in refs
        if (why := names.problem(ref)) is not None
    ]
