"""What exists in the package, read from its source: what the names in the docs resolve against.

The docs and the docstrings name modules, classes, functions and attributes; a rename that forgets
them leaves a map that sends the reader nowhere. This module parses every module of
``tiny_harness`` (never imports it: no side effects, and fast) into its top-level names, its
classes' members and its imports, and answers one question: does this dotted name exist?

A name that leaves the package is the library's: one of the standard library
(``asyncio.TaskGroup``) is imported and asked; another library's (a class imported from
``a2a``) is only looked for, since importing some of them takes seconds.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "tiny_harness"


@dataclass
class ClassInfo:
    """One class: its members (methods, class-level and ``self.`` attributes, nested classes),
    the annotation of each annotated member, and its bases as written."""

    module: str
    qualname: str
    members: set[str] = field(default_factory=set)
    annotations: dict[str, ast.expr] = field(default_factory=dict)
    bases: list[ast.expr] = field(default_factory=list)


@dataclass
class ModuleInfo:
    """One module: where it is, the names it defines at the top level, what it imports, and its
    classes by qualified name (``Outer.Inner``)."""

    name: str
    path: Path
    is_package: bool
    defined: set[str] = field(default_factory=set)
    imported: dict[str, str] = field(default_factory=dict)
    star_imports: list[str] = field(default_factory=list)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    class_lines: list[tuple[int, int, str]] = field(default_factory=list)
    source: str = ""
    docstring_lines: set[int] = field(default_factory=set)

    def class_at(self, line: int) -> str | None:
        """The innermost class whose body holds ``line``, if any."""
        found: tuple[int, str] | None = None
        for start, end, qualname in self.class_lines:
            if start <= line <= end and (found is None or start >= found[0]):
                found = (start, qualname)
        return None if found is None else found[1]


def module_name(path: Path) -> str:
    """``tiny_harness/kube/client.py`` -> ``tiny_harness.kube.client`` (a package is its
    ``__init__``)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _absolute(module: ModuleInfo, level: int, target: str | None) -> str:
    """The absolute module a relative ``from`` import names."""
    if level == 0:
        return target or ""
    base = module.name.split(".")
    if not module.is_package:
        base.pop()
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, target] if target else base)


def _targets(node: ast.expr) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Tuple | ast.List):
        for element in node.elts:
            yield from _targets(element)


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a module's top level, including those under ``if``/``try``/``with``."""
    for node in body:
        yield node
        if isinstance(node, ast.If | ast.Try | ast.With):
            for block in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, block, [])
                for item in inner:
                    if isinstance(item, ast.ExceptHandler):
                        yield from _top_level(item.body)
                    else:
                        yield from _top_level([item])


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a body, nested blocks included, without descending into expressions
    (where no attribute is assigned) or into nested functions and classes."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt):
            yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for block in _BLOCKS:
            stack.extend(reversed(getattr(node, block, ())))


def _read_class(module: ModuleInfo, node: ast.ClassDef, prefix: str) -> None:
    qualname = f"{prefix}{node.name}"
    info = ClassInfo(module.name, qualname, bases=list(node.bases))
    module.classes[qualname] = info
    module.class_lines.append((node.lineno, node.end_lineno or node.lineno, qualname))
    for item in _top_level(node.body):
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            info.members.add(item.name)
            if item.returns is not None:
                info.annotations[item.name] = item.returns
            for inner in _statements(item.body):
                _read_self_attribute(info, inner)
        elif isinstance(item, ast.ClassDef):
            info.members.add(item.name)
            _read_class(module, item, f"{qualname}.")
        elif isinstance(item, ast.Assign):
            for target in item.targets:
                info.members.update(_targets(target))
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            info.members.add(item.target.id)
            info.annotations[item.target.id] = item.annotation


def _read_self_attribute(info: ClassInfo, node: ast.stmt) -> None:
    """``self.x = ...`` and ``self.x: T = ...`` in a method make ``x`` a member."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        targets = [node.target]
    for target in targets:
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            info.members.add(target.attr)
            if isinstance(node, ast.AnnAssign):
                info.annotations.setdefault(target.attr, node.annotation)


def _read_docstrings(module: ModuleInfo, tree: ast.Module) -> None:
    """The lines of every docstring (of the module, its classes and functions, at any depth)."""
    bodies: list[list[ast.stmt]] = [tree.body]
    while bodies:
        body = bodies.pop()
        first = body[0] if body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            module.docstring_lines.update(range(first.lineno, (first.end_lineno or 0) + 1))
        for node in _statements(body):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                bodies.append(node.body)


def read_module(path: Path) -> ModuleInfo:
    """Parse one module into what it defines and imports."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, str(path))
    module = ModuleInfo(module_name(path), path, path.name == "__init__.py", source=source)
    _read_docstrings(module, tree)
    for node in _top_level(tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            module.defined.add(node.name)
        elif isinstance(node, ast.ClassDef):
            module.defined.add(node.name)
            _read_class(module, node, "")
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                module.defined.update(_targets(target))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            module.defined.add(node.target.id)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    module.imported[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    module.imported[top] = top
        elif isinstance(node, ast.ImportFrom):
            origin = _absolute(module, node.level, node.module)
            for alias in node.names:
                if alias.name == "*":
                    module.star_imports.append(origin)
                else:
                    module.imported[alias.asname or alias.name] = f"{origin}.{alias.name}"
    return module


def _annotation_names(annotation: ast.expr) -> Iterator[str]:
    """The dotted names an annotation could be (``X | None`` -> ``X``; ``"X"`` -> ``X``)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            yield from _annotation_names(ast.parse(annotation.value, mode="eval").body)
        except SyntaxError:
            return
    elif isinstance(annotation, ast.BinOp):
        yield from _annotation_names(annotation.left)
        yield from _annotation_names(annotation.right)
    elif isinstance(annotation, ast.Subscript):
        yield from _annotation_names(annotation.value)
        yield from _annotation_names(annotation.slice)
    elif isinstance(annotation, ast.Tuple):
        for element in annotation.elts:
            yield from _annotation_names(element)
    elif isinstance(annotation, ast.Name | ast.Attribute):
        yield ast.unparse(annotation)


_OPEN_TYPES = frozenset({"Any", "Mapping", "MutableMapping", "dict", "Dict", "object"})
"""An attribute of one of these types may hold any key: a name through it is not checked further."""


class PackageIndex:
    """Every module of the package, parsed once, and the one question asked of it."""

    def __init__(self, package_dir: Path | None = None) -> None:
        package_dir = package_dir or ROOT / PACKAGE
        self.modules: dict[str, ModuleInfo] = {}
        for path in sorted(package_dir.rglob("*.py")):
            module = read_module(path)
            self.modules[module.name] = module
        self._external: dict[str, bool] = {}

    @cached_property
    def qualified_names(self) -> dict[str, list[str]]:
        """Every name the package defines, fully qualified, keyed by its last part (for the
        suffix search a leading dot asks for)."""
        names: dict[str, list[str]] = {}

        def add(name: str) -> None:
            names.setdefault(name.rsplit(".", 1)[-1], []).append(name)

        for module in self.modules.values():
            add(module.name)
            for defined in module.defined:
                add(f"{module.name}.{defined}")
            for cls in module.classes.values():
                for member in cls.members:
                    add(f"{module.name}.{cls.qualname}.{member}")
        return names

    @cached_property
    def _spelled(self) -> set[str]:
        pattern = re.compile(r"""["']([\w.-]+)["']""")
        return {word for module in self.modules.values() for word in pattern.findall(module.source)}

    def spells(self, text: str) -> bool:
        """Whether the package writes ``text`` as a string literal (a span attribute, a hook point,
        a metric's name): such a name exists as long as the code still spells it."""
        return text in self._spelled

    def resolves(self, dotted: str) -> bool:
        """Whether a fully qualified name exists: a module, or a name found by walking a module's
        definitions, imports and class members (bases and annotated types included)."""
        return self._resolve(dotted.split("."), depth=0)

    def _resolve(self, parts: list[str], depth: int) -> bool:
        if depth > 20 or not parts:
            return False
        if parts[0] != PACKAGE:
            return self._external_resolves(".".join(parts))
        for cut in range(len(parts), 0, -1):
            module = self.modules.get(".".join(parts[:cut]))
            if module is not None:
                return self._in_module(module, parts[cut:], depth)
        return False

    def _in_module(self, module: ModuleInfo, rest: list[str], depth: int) -> bool:
        if not rest:
            return True
        head, tail = rest[0], rest[1:]
        if head in module.classes:
            return self._in_class(module.classes[head], tail, depth)
        if head in module.defined:
            return not tail
        if head in module.imported:
            return self._resolve([*module.imported[head].split("."), *tail], depth + 1)
        return any(
            self._resolve([*source.split("."), *rest], depth + 1) for source in module.star_imports
        )

    def _in_class(self, cls: ClassInfo, rest: list[str], depth: int) -> bool:
        if not rest:
            return True
        module = self.modules[cls.module]
        head, tail = rest[0], rest[1:]
        nested = module.classes.get(f"{cls.qualname}.{head}")
        if nested is not None:
            return self._in_class(nested, tail, depth)
        if head in cls.members:
            if not tail:
                return True
            annotation = cls.annotations.get(head)
            if annotation is None:
                return False
            return any(
                name.split(".")[-1] in _OPEN_TYPES
                or self._in_scope(module, cls, [*name.split("."), *tail], depth + 1)
                for name in _annotation_names(annotation)
            )
        return any(self._in_base(module, base, rest, depth) for base in cls.bases)

    def _in_base(self, module: ModuleInfo, base: ast.expr, rest: list[str], depth: int) -> bool:
        """A member inherited from a base: one of ours is walked, the standard library's is asked;
        another library's base opens no name (a settings section is not any key because it is
        a pydantic model)."""
        if isinstance(base, ast.Subscript):
            base = base.value
        written = ast.unparse(base).split(".")
        head = written[0]
        if head in module.classes:
            return self._in_class(module.classes[head], [*written[1:], *rest], depth + 1)
        origin = module.imported.get(head, f"builtins.{head}" if hasattr(builtins, head) else "")
        if not origin:
            return False
        parts = [*origin.split("."), *written[1:], *rest]
        if parts[0] == PACKAGE:
            return self._resolve(parts, depth + 1)
        return parts[0] in sys.stdlib_module_names and self._external_resolves(".".join(parts))

    def _in_scope(
        self, module: ModuleInfo, cls: ClassInfo | None, parts: list[str], depth: int
    ) -> bool:
        """A name as code in ``module`` (inside ``cls``, if given) would see it."""
        if cls is not None and self._in_class(cls, parts, depth):
            return True
        head = parts[0]
        if head in module.classes or head in module.defined or head in module.imported:
            return self._in_module(module, parts, depth)
        if any(self._resolve([*s.split("."), *parts], depth + 1) for s in module.star_imports):
            return True
        if hasattr(builtins, head):
            return self._external_resolves(".".join(["builtins", *parts]))
        return self._resolve(parts, depth + 1)

    def resolves_in(self, module: str, cls: str | None, dotted: str) -> bool:
        """Whether ``dotted`` means something as written in ``module`` (within class ``cls``)."""
        info = self.modules[module]
        scope = info.classes.get(cls) if cls else None
        return self._in_scope(info, scope, dotted.split("."), 0)

    def _external_resolves(self, dotted: str) -> bool:
        """A name outside the package, asked of its library once."""
        if dotted not in self._external:
            self._external[dotted] = _import_resolves(dotted)
        return self._external[dotted]


def _import_resolves(dotted: str) -> bool:
    """The standard library is imported and asked; another library is only looked for, since
    importing some (the Kubernetes and model SDKs) takes seconds, and its names are its own."""
    parts = dotted.split(".")
    if parts[0] not in sys.stdlib_module_names:
        return importlib.util.find_spec(parts[0]) is not None
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            if not hasattr(found, part):
                annotations = getattr(found, "__annotations__", {})
                fields = getattr(found, "model_fields", {})
                if part not in annotations and part not in fields:
                    return False
                return part == parts[-1]
            found = getattr(found, part)
        return True
    return False
