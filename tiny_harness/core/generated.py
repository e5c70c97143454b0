"""Files generated from the models, and the one ``--write`` / ``--check`` command for each set.

Several sets of files are cut from the models (the A2A extension schemas, the plugin file
schemas); each must be rewritten by one command and checked by a test so it cannot drift. This
module is that command, once, for every set.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GeneratedSet:
    """A set of generated files: where they live, and how to produce their text by name."""

    module: str
    description: str
    default_dir: Path
    files: Callable[[], dict[str, str]]

    def stale(self, directory: Path | None = None) -> list[str]:
        """The files in ``directory`` that are missing or differ from the generated text."""
        directory = directory or self.default_dir
        return [
            name
            for name, text in self.files().items()
            if not (directory / name).is_file()
            or (directory / name).read_text(encoding="utf-8") != text
        ]

    def write(self, directory: Path | None = None) -> list[Path]:
        """(Re)write every stale file in ``directory``; returns the paths that changed."""
        directory = directory or self.default_dir
        directory.mkdir(parents=True, exist_ok=True)
        texts = self.files()
        changed = []
        for name in self.stale(directory):
            path = directory / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(texts[name], encoding="utf-8")
            changed.append(path)
        return changed

    def main(self, argv: Sequence[str] | None = None, *, out: Callable[[str], None] = print) -> int:
        """``python -m <module> (--write | --check) [--dir DIR]``."""
        parser = argparse.ArgumentParser(
            prog=f"python -m {self.module}", description=self.description
        )
        mode = parser.add_mutually_exclusive_group(required=True)
        mode.add_argument("--write", action="store_true", help="rewrite the generated files")
        mode.add_argument("--check", action="store_true", help="exit 1 if a file is stale")
        parser.add_argument("--dir", type=Path, default=self.default_dir, help="the directory")
        args = parser.parse_args(argv)
        directory: Path = args.dir
        if args.write:
            for path in self.write(directory):
                out(f"wrote {path}")
            return 0
        stale = self.stale(directory)
        for name in stale:
            out(f"stale: {directory / name} (run: python -m {self.module} --write)")
        return 1 if stale else 0
