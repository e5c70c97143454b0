"""The CLI's front door: the configuration named in --help, the default file made on first
use, and a bad file refused with exit 2, the key named and the file untouched."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tiny_harness.cli.main import load_settings, main


@pytest.fixture
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "home"
    monkeypatch.setenv("TINY_HARNESS_HOME", str(where))
    monkeypatch.delenv("TINY_HARNESS_CONFIG", raising=False)
    return where


@pytest.mark.parametrize("argv", [["--help"], ["up", "--help"], ["operator", "--help"]])
def test_help_names_the_file_in_effect_and_creates_nothing(
    fresh_home: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert f"configuration: {fresh_home}/config.toml (default; --config overrides)" in out
    assert not fresh_home.exists()


def test_help_names_a_flagged_file(fresh_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["gateway", "--config", "demo.toml", "--help"])
    assert "configuration: demo.toml (--config)" in capsys.readouterr().out


def test_first_use_creates_the_default_file_and_says_so(
    fresh_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = load_settings(None)
    path = fresh_home / "config.toml"
    assert f"created default configuration {path}" in capsys.readouterr().err
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert settings.gateway.namespace == "default"
    load_settings(None)  # the second time, it is only read
    assert "created" not in capsys.readouterr().err


def test_a_bad_file_exits_2_naming_the_key_and_is_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    text = '[gateway]\nmax_request_bytes = "lots"\n'
    bad.write_text(text)
    assert main(["gateway", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "configuration error: gateway.max_request_bytes" in err
    assert bad.read_text() == text


def test_a_symlinked_home_exits_2_naming_it(
    tmp_path: Path, fresh_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "elsewhere").mkdir()
    fresh_home.symlink_to(tmp_path / "elsewhere")
    assert main(["gateway"]) == 2
    assert f"configuration error: {fresh_home}: the configuration home is a symbolic link" in (
        capsys.readouterr().err
    )
    assert list((tmp_path / "elsewhere").iterdir()) == []
