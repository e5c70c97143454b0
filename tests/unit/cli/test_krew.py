"""The krew manifest of ``kubectl harness``: current with the package's version, holding every
field krew checks before it installs a plugin, and naming by sha256 an archive whose launcher
runs the plugin."""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import yaml

from tiny_harness import __version__
from tiny_harness.cli import krew

MANIFEST = krew.MANIFEST_DIR / "harness.yaml"


def test_the_committed_manifest_is_the_generated_one() -> None:
    assert krew.GENERATED.stale() == [], "run: python -m tiny_harness.cli.krew --write"


def test_the_manifest_is_of_the_packages_version() -> None:
    pyproject = tomllib.loads((krew.REPO_ROOT / "pyproject.toml").read_text())
    plugin = yaml.safe_load(MANIFEST.read_text())

    assert __version__ == pyproject["project"]["version"]
    assert plugin["spec"]["version"] == f"v{__version__}"
    assert f"/releases/download/v{__version__}/" in plugin["spec"]["platforms"][0]["uri"]
    assert f"pip install tiny-harness=={__version__}" in plugin["spec"]["caveats"]


def test_the_manifest_has_what_krew_requires() -> None:
    """The checks of krew's own manifest validation, one by one."""
    plugin = yaml.safe_load(MANIFEST.read_text())
    spec = plugin["spec"]

    assert plugin["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert plugin["kind"] == "Plugin"
    assert plugin["metadata"]["name"] == MANIFEST.stem == "harness"
    assert re.fullmatch(r"[\w-]+", plugin["metadata"]["name"])
    assert spec["shortDescription"]
    assert not re.search(r"[\r\n]", spec["shortDescription"])
    assert re.fullmatch(r"v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?", spec["version"])
    assert spec["platforms"]
    for platform in spec["platforms"]:
        assert platform["uri"].startswith("https://")
        assert re.fullmatch(r"[a-f0-9]{64}", platform["sha256"])
        assert platform["bin"]
        assert all(op["from"] and op["to"] for op in platform["files"])
        selector = platform["selector"]
        keys = [*selector.get("matchLabels", {}), *(e["key"] for e in selector["matchExpressions"])]
        assert keys
        assert set(keys) <= {"os", "arch"}


def test_the_sha256_is_the_archives_and_the_archive_is_the_same_every_time() -> None:
    plugin = yaml.safe_load(MANIFEST.read_text())

    first, again = krew.archive(), krew.archive()

    assert first == again
    assert plugin["spec"]["platforms"][0]["sha256"] == hashlib.sha256(first).hexdigest()


def test_the_archives_launcher_runs_the_plugin(tmp_path: Path) -> None:
    plugin = yaml.safe_load(MANIFEST.read_text())
    platform = plugin["spec"]["platforms"][0]
    with zipfile.ZipFile(io.BytesIO(krew.archive())) as archive:
        assert sorted(archive.namelist()) == sorted(op["from"] for op in platform["files"])
        archive.extractall(tmp_path)
        for info in archive.infolist():
            (tmp_path / info.filename).chmod(stat.S_IMODE(info.external_attr >> 16))
    launcher = tmp_path / platform["bin"]
    assert os.access(launcher, os.X_OK)

    helped = subprocess.run(
        [str(launcher), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TINY_HARNESS_PYTHON": sys.executable},
        check=False,
    )
    completed = subprocess.run(
        [str(tmp_path / "kubectl_complete-harness"), "lis"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TINY_HARNESS_PYTHON": sys.executable},
        check=False,
    )

    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: kubectl harness")
    assert completed.stdout.startswith("list\t")
