"""The krew plugin manifest of ``kubectl harness``, and the archive it installs, per version.

krew installs a plugin from a manifest (``plugins/krew/harness.yaml``) that names an archive
by URL and sha256 and the program in it to put on PATH. The plugin is the ``tiny-harness``
Python package, so the archive holds two small launchers, ``kubectl-harness`` and
``kubectl_complete-harness``, that run that package's plugin and completion with the Python on
PATH; the manifest's caveats say to ``pip install`` the same version. Both are cut from
:data:`tiny_harness.__version__`: the archive is built byte for byte the same every time (fixed
times, owners and order), so the sha256 in the committed manifest is that of the archive a
release uploads, and a test fails when the manifest is stale. Regenerate with::

    python -m tiny_harness.cli.krew --write              # plugins/krew/harness.yaml
    python -m tiny_harness.cli.krew --archive dist       # dist/kubectl-harness-v<version>.zip
"""

from __future__ import annotations

import argparse
import hashlib
import io
import stat
import sys
import textwrap
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import yaml

from tiny_harness import __version__
from tiny_harness.core.generated import GeneratedSet

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
#: krew's plugin name: ``kubectl krew install harness`` gives ``kubectl harness``.
PLUGIN: Final = "harness"
API_VERSION: Final = "krew.googlecontainertools.github.com/v1alpha2"
HOMEPAGE: Final = "https://github.com/madarauchiha-314/tiny-harness"
MANIFEST_DIR: Final = REPO_ROOT / "plugins" / "krew"

#: The launchers in the archive: a program's name, and the module it runs.
LAUNCHERS: Final = {
    "kubectl-harness": "tiny_harness.cli.kubectl_plugin",
    "kubectl_complete-harness": "tiny_harness.cli.kubectl_complete",
}
_LAUNCHER: Final = """#!/bin/sh
# {program} {version}, installed by krew: runs the tiny-harness package
# (pip install tiny-harness=={version}) with $TINY_HARNESS_PYTHON, else python3.
exec "${{TINY_HARNESS_PYTHON:-python3}}" -m {module} "$@"
"""


def tag(version: str = __version__) -> str:
    """The release's tag, and krew's version: ``v`` and the package's version."""
    return f"v{version}"


def archive_name(version: str = __version__) -> str:
    return f"kubectl-harness-{tag(version)}.zip"


def archive_url(version: str = __version__) -> str:
    """Where a release uploads the archive."""
    return f"{HOMEPAGE}/releases/download/{tag(version)}/{archive_name(version)}"


def archive(version: str = __version__) -> bytes:
    """The archive krew installs: a zip, stored rather than compressed and with fixed times
    and modes, so the same version is the same bytes on any machine."""
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, mode="w", compression=zipfile.ZIP_STORED) as archive:
        for program, module in sorted(LAUNCHERS.items()):
            info = zipfile.ZipInfo(program, date_time=(1980, 1, 1, 0, 0, 0))
            info.create_system = 3  # unix, so the mode below is read
            info.external_attr = (stat.S_IFREG | 0o755) << 16
            text = _LAUNCHER.format(program=program, version=version, module=module)
            archive.writestr(info, text)
    return packed.getvalue()


def manifest(version: str = __version__) -> dict[str, Any]:
    """The krew ``Plugin`` for ``version``."""
    return {
        "apiVersion": API_VERSION,
        "kind": "Plugin",
        "metadata": {"name": PLUGIN},
        "spec": {
            "version": tag(version),
            "homepage": HOMEPAGE,
            "shortDescription": "Work on tiny-harness agent tasks as a participant",
            "description": textwrap.fill(
                "Lists the tiny-harness tasks (HarnessTask resources) you are on as a tree, "
                "shows one with its conversation, sends it messages and /commands, approves "
                "or rejects the tool calls that wait for you, completes or cancels it, and "
                "follows it live. You act as your Kubernetes user; a task you are not on is "
                "reported as not found.",
                80,
            )
            + "\n",
            "caveats": (
                f"This plugin runs the tiny-harness Python package (Python 3.11 or later):\n"
                f"\n  pip install tiny-harness=={version}\n\n"
                "It uses python3 from PATH, or $TINY_HARNESS_PYTHON. kubectl completes\n"
                "`kubectl harness ...` (kubectl 1.26+) once kubectl_complete-harness, which\n"
                "is in this plugin's directory, is linked onto PATH as well.\n"
            ),
            "platforms": [
                {
                    "selector": {
                        "matchExpressions": [
                            {"key": "os", "operator": "In", "values": ["darwin", "linux"]}
                        ]
                    },
                    "uri": archive_url(version),
                    "sha256": hashlib.sha256(archive(version)).hexdigest(),
                    "bin": "kubectl-harness",
                    "files": [{"from": program, "to": "."} for program in sorted(LAUNCHERS)],
                }
            ],
        },
    }


_HEADER: Final = (
    "# Generated from tiny_harness.__version__ by `python -m tiny_harness.cli.krew --write`.\n"
    "# Do not edit by hand; the archive it names is built by `--archive DIR`.\n"
)


class _Dumper(yaml.SafeDumper):
    """Texts of several lines as YAML blocks, as people write manifests."""

    def represent_str(self, data: str) -> yaml.ScalarNode:
        style = "|" if "\n" in data else None
        return self.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _Dumper.represent_str)


def manifest_files() -> dict[str, str]:
    text = yaml.dump(manifest(), Dumper=_Dumper, sort_keys=False, width=100)
    return {f"{PLUGIN}.yaml": _HEADER + text}


GENERATED: Final = GeneratedSet(
    module="tiny_harness.cli.krew",
    description="Write or check the krew plugin manifest (plugins/krew/harness.yaml).",
    default_dir=MANIFEST_DIR,
    files=manifest_files,
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tiny_harness.cli.krew",
        description="Write or check the krew manifest; write the archive it names.",
    )
    parser.add_argument("--archive", type=Path, metavar="DIR", help="write the archive in DIR")
    args, rest = parser.parse_known_args(argv)
    if args.archive is not None:
        args.archive.mkdir(parents=True, exist_ok=True)
        path = args.archive / archive_name()
        path.write_bytes(archive())
        print(f"wrote {path}")
        if not rest:
            return 0
    return GENERATED.main(rest)


if __name__ == "__main__":
    sys.exit(main())
