"""The configuration home (cli/home.py): which file is read, and the default one made safely
(abuse cases 7 and 8: a symlinked or foreign home or file is refused with nothing written;
the home is 0700 and the file 0600)."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tiny_harness.cli import home as home_module
from tiny_harness.cli.home import CONFIG_NAME, default_text, ensure_default, home, resolve
from tiny_harness.core.errors import ConfigError
from tiny_harness.core.settings import Settings

# -- resolution ---------------------------------------------------------------------------------


def test_the_flag_wins_then_the_variable_then_the_home(tmp_path: Path) -> None:
    env = {"TINY_HARNESS_CONFIG": "/etc/th.toml", "TINY_HARNESS_HOME": str(tmp_path / "h")}
    assert resolve(Path("./mine.toml"), env).path == Path("./mine.toml")
    assert resolve(Path("./mine.toml"), env).origin == "--config"
    assert resolve(None, env).path == Path("/etc/th.toml")
    del env["TINY_HARNESS_CONFIG"]
    assert resolve(None, env).path == tmp_path / "h" / CONFIG_NAME
    assert resolve(None, env).origin == "default"
    assert home({}) == Path("~/.tiny-harness").expanduser()
    assert not (tmp_path / "h").exists()  # resolving touches nothing


def test_help_describes_the_file_in_effect() -> None:
    assert (
        resolve(None, {}).describe() == "~/.tiny-harness/config.toml (default; --config overrides)"
    )
    assert resolve(Path("demo.toml"), {}).describe() == "demo.toml (--config)"


# -- creation -----------------------------------------------------------------------------------


def test_the_default_is_created_with_private_modes_and_loads_as_the_settings(
    tmp_path: Path,
) -> None:
    where = tmp_path / "nested" / ".tiny-harness"
    path, created = ensure_default(where)
    assert created
    assert path == where / CONFIG_NAME
    assert stat.S_IMODE(os.stat(where).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    settings = Settings.load(path)
    assert settings.gateway.url == "http://127.0.0.1:8080"
    assert settings.client.url(settings.gateway) == "http://127.0.0.1:8080"
    text = path.read_text()
    assert str(where / "cluster") in text
    assert not any(word in text.lower() for word in ("sk-", "api_key =", "token ="))


def test_an_existing_file_is_used_and_never_rewritten(tmp_path: Path) -> None:
    where = tmp_path / "h"
    where.mkdir(mode=0o700)
    mine = where / CONFIG_NAME
    mine.write_text('provider = "anthropic"\n')
    path, created = ensure_default(where)
    assert (path, created) == (mine, False)
    assert mine.read_text() == 'provider = "anthropic"\n'


def test_a_symlinked_home_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    target = tmp_path / "theirs"
    target.mkdir()
    link = tmp_path / "h"
    link.symlink_to(target)
    with pytest.raises(ConfigError, match="symbolic link"):
        ensure_default(link)
    assert list(target.iterdir()) == []


def test_a_symlinked_file_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    where = tmp_path / "h"
    where.mkdir(mode=0o700)
    target = tmp_path / "precious"
    target.write_text("keep me")
    (where / CONFIG_NAME).symlink_to(target)
    with pytest.raises(ConfigError, match="symbolic link") as refused:
        ensure_default(where)
    assert str(where / CONFIG_NAME) in str(refused.value)
    assert target.read_text() == "keep me"


def test_a_dangling_symlink_is_refused_not_created_through(tmp_path: Path) -> None:
    where = tmp_path / "h"
    where.mkdir(mode=0o700)
    (where / CONFIG_NAME).symlink_to(tmp_path / "would-be-created")
    with pytest.raises(ConfigError, match="symbolic link"):
        ensure_default(where)
    assert not (tmp_path / "would-be-created").exists()


def test_a_home_that_is_a_file_is_refused(tmp_path: Path) -> None:
    where = tmp_path / "h"
    where.write_text("")
    with pytest.raises(ConfigError, match="not a directory"):
        ensure_default(where)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another uid takes root")
@pytest.mark.parametrize("what", ["home", "file"])
def test_a_home_or_file_owned_by_another_user_is_refused(tmp_path: Path, what: str) -> None:
    where = tmp_path / "h"
    where.mkdir(mode=0o700)
    stranger = 54321
    if what == "file":
        (where / CONFIG_NAME).write_text("stranger's")
        os.chown(where / CONFIG_NAME, stranger, -1)
    else:
        os.chown(where, stranger, -1)
    with pytest.raises(ConfigError, match=f"belongs to uid {stranger}"):
        ensure_default(where)
    assert [p.name for p in where.iterdir()] == ([CONFIG_NAME] if what == "file" else [])
    if what == "file":
        assert (where / CONFIG_NAME).read_text() == "stranger's"


def test_a_file_appearing_between_the_check_and_the_create_is_judged_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The O_EXCL race: another process makes the file (here a symlink) right after the
    check found nothing. The create fails, and what appeared is refused like any symlink."""
    where = tmp_path / "h"
    where.mkdir(mode=0o700)
    target = tmp_path / "precious"
    target.write_text("keep me")
    real_open = os.open

    def racing_open(path: Any, flags: int, mode: int = 0o777) -> int:
        if Path(path).name == CONFIG_NAME and not (where / CONFIG_NAME).is_symlink():
            (where / CONFIG_NAME).symlink_to(target)
        return real_open(path, flags, mode)

    monkeypatch.setattr(home_module.os, "open", racing_open)
    with pytest.raises(ConfigError, match="symbolic link"):
        ensure_default(where)
    assert target.read_text() == "keep me"


def test_the_default_text_names_the_home_and_parses(tmp_path: Path) -> None:
    text = default_text(tmp_path)
    assert Settings.parse(tomllib.loads(text)).gateway.namespace == "default"
    assert f"{tmp_path}/cluster" in text
