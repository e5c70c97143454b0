"""No long rooms: every module of the package stays within 600 lines and every class within
250, so a newcomer reads one idea at a time. When a change crosses a bound, split along the
seam the code already shows (docs/design/README.md names where each part lives) rather than
raising the bound."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Final

PACKAGE: Final = Path(__file__).resolve().parents[2] / "tiny_harness"
MODULE_LINES: Final = 600
CLASS_LINES: Final = 250


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(p.relative_to(PACKAGE.parent)): n
        for p in _modules()
        if (n := len(p.read_text().splitlines())) > MODULE_LINES
    }
    assert long == {}, f"modules over {MODULE_LINES} lines (split them along a seam): {long}"


def test_no_class_is_over_250_lines() -> None:
    long: dict[str, int] = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > CLASS_LINES:
                    long[f"{path.relative_to(PACKAGE.parent)}::{node.name}"] = lines
    assert long == {}, f"classes over {CLASS_LINES} lines (give a part its own class): {long}"


def test_the_bounds_see_the_package() -> None:
    assert len(_modules()) > 100  # a wrong path would pass the two tests above vacuously
